import CSystemShims

#if canImport(Glibc)
import Glibc
#endif

/// The minimal server's loop, Redis' shape on one thread: it sleeps in `epoll_wait` on the
/// listening socket and its connections; a tick accepts, reads once per readable connection and
/// serves every complete line read, then makes one journal `write` for the tick's changes, then
/// one reply `write` per connection, before it sleeps again. A write that does not finish waits
/// for EPOLLOUT, and the connection is not read meanwhile.
final class MinimalEventLoop {
    private let listener: Int32
    private let epoll: Int32
    /// The journal file, opened for appending.
    private let journal: Int32
    /// The benchmark macro, in its JavaScriptCore context.
    let macro: MinimalMacroCall
    /// The connections, by file descriptor.
    private var connections: [MinimalConnection?] = []
    /// The connections with replies (or an end of stream) from this tick.
    private var tick: [MinimalConnection] = []
    /// This tick's journal lines.
    var journalLines: [UInt8] = []

    /// The epoll events of a connection that is read, and of one whose replies wait.
    private static let readable = EPOLLIN.rawValue
    private static let writable = EPOLLOUT.rawValue

    /// Listens on `socketPath` (a file there is replaced) and opens `journalPath` for appending.
    init(socketPath: String, journalPath: String, macro: MinimalMacroCall) throws {
        self.macro = macro
        unlink(socketPath)
        listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        let listening = listener
        guard listening >= 0, withUnixAddress(socketPath, { bind(listening, $0, $1) }) == 0, listen(listening, 511) == 0 else {
            throw BenchError("minimal server: cannot listen on \(socketPath): \(String(cString: strerror(errno)))")
        }
        epoll = epoll_create1(Int32(EPOLL_CLOEXEC))
        journal = open(journalPath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard epoll >= 0, journal >= 0 else { throw BenchError("minimal server: \(String(cString: strerror(errno)))") }
        try control(EPOLL_CTL_ADD, listener, Self.readable)
        journalLines.reserveCapacity(16 * 1024)
    }

    /// Serves until the process is killed.
    func run() throws -> Never {
        let capacity = 256
        let events = UnsafeMutablePointer<epoll_event>.allocate(capacity: capacity)
        while true {
            let count = epoll_wait(epoll, events, Int32(capacity), -1)
            if count < 0 {
                guard errno == EINTR else { throw BenchError("minimal server: epoll_wait: \(String(cString: strerror(errno)))") }
                continue
            }
            for index in 0..<Int(count) {
                let fd = events[index].data.fd
                let flags = events[index].events
                if fd == listener {
                    try acceptAll()
                    continue
                }
                guard fd >= 0, Int(fd) < connections.count, let connection = connections[Int(fd)] else { continue }
                if flags & Self.writable != 0 { try writable(connection) }
                if connection.isOpen, flags & (Self.readable | EPOLLHUP.rawValue | EPOLLERR.rawValue) != 0 { readable(connection) }
            }
            try endTick()
        }
    }

    /// Accepts every pending connection (non-blocking, registered for reads).
    private func acceptAll() throws {
        while true {
            let fd = macroengine_accept_nonblocking(listener)
            guard fd >= 0 else { return }
            if fd >= connections.count { connections += Array(repeating: nil, count: Int(fd) + 1 - connections.count) }
            connections[Int(fd)] = MinimalConnection(fd: fd, interest: Self.readable)
            try control(EPOLL_CTL_ADD, fd, Self.readable)
        }
    }

    /// One read, then every complete line read served into the connection's replies.
    private func readable(_ connection: MinimalConnection) {
        let count = connection.readOnce()
        if count > 0 {
            var served = false
            connection.forEachLine { line in
                serve(line, to: &connection.output)
                served = true
            }
            if served { markForTick(connection) }
        } else if count == 0 {
            connection.peerClosed = true
            markForTick(connection)
        } else if errno != EAGAIN && errno != EINTR {
            close(connection)
        }
    }

    /// The socket takes writes again: the rest of the replies.
    private func writable(_ connection: MinimalConnection) throws {
        try flush(connection)
    }

    /// The end of a tick: the journal's one write, then each connection's replies in one write.
    private func endTick() throws {
        if !journalLines.isEmpty {
            try journalLines.withUnsafeBytes { bytes in
                var offset = 0
                while offset < bytes.count {
                    let written = write(journal, bytes.baseAddress! + offset, bytes.count - offset)
                    if written < 0 {
                        guard errno == EINTR else { throw BenchError("minimal server: journal write: \(String(cString: strerror(errno)))") }
                        continue
                    }
                    offset += written
                }
            }
            journalLines.removeAll(keepingCapacity: true)
        }
        for connection in tick {
            connection.inTick = false
            if connection.isOpen, !connection.waitsForWritable { try flush(connection) }
        }
        tick.removeAll(keepingCapacity: true)
    }

    /// Writes the connection's replies; registers for EPOLLOUT when the write does not finish,
    /// for reads again when it does, and closes it when its client has left and all is written.
    private func flush(_ connection: MinimalConnection) throws {
        switch connection.writeReplies() {
        case nil:
            close(connection)
        case false?:
            try setInterest(connection, Self.writable)
        case true?:
            if connection.peerClosed { close(connection) } else { try setInterest(connection, Self.readable) }
        }
    }

    private func markForTick(_ connection: MinimalConnection) {
        guard !connection.inTick else { return }
        connection.inTick = true
        tick.append(connection)
    }

    private func setInterest(_ connection: MinimalConnection, _ events: UInt32) throws {
        guard connection.interest != events else { return }
        connection.interest = events
        try control(EPOLL_CTL_MOD, connection.fd, events)
    }

    private func close(_ connection: MinimalConnection) {
        connections[Int(connection.fd)] = nil
        connection.close()
    }

    private func control(_ operation: Int32, _ fd: Int32, _ events: UInt32) throws {
        var event = epoll_event()
        event.events = events
        event.data.fd = fd
        guard epoll_ctl(epoll, operation, fd, &event) == 0 else {
            throw BenchError("minimal server: epoll_ctl: \(String(cString: strerror(errno)))")
        }
    }
}
