import Foundation
import MacroBase

#if canImport(Glibc)
import Glibc
#endif

/// A small blocking JSON-RPC client for macrod's Unix socket (one JSON text per line). Used by
/// the `macro` CLI and the tests; not thread-safe (one user at a time).
public final class RPCClient {
    /// Why a connection failed.
    public struct ConnectError: Error, CustomStringConvertible, Sendable {
        /// Nothing listens there (no file, or a stale socket): exit 69.
        public static let unreachable = 69
        /// The daemon or the file system refused us (permissions, uid not allowed): exit 77.
        public static let refused = 77
        /// 69 or 77.
        public var exitCode: Int32
        /// What happened, naming the socket.
        public var description: String
    }

    /// The socket path.
    public let path: String
    private let fd: Int32
    private var buffer: [UInt8] = []
    /// Where the unread bytes of ``buffer`` start (lines before it were returned).
    private var start = 0
    /// How far past ``start`` the buffer is known to hold no newline (each byte is looked at
    /// once, however many reads a long line takes).
    private var scanned = 0
    private var nextID = 0
    /// Notifications read while waiting for a response, oldest first.
    public private(set) var pendingNotifications: [MacroValue] = []

    /// Connects to `path`.
    public init(path: String) throws(ConnectError) {
        self.path = path
        guard path.utf8.count <= SocketPath.maximumLength else {
            throw ConnectError(exitCode: Int32(ConnectError.unreachable), description: "socket path too long: \(path)")
        }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else {
            throw ConnectError(exitCode: Int32(ConnectError.unreachable), description: "cannot create a socket: \(String(cString: strerror(errno)))")
        }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, byte) in path.utf8.enumerated() { raw[i] = byte }
        }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard result == 0 else {
            let code = errno
            close(fd)
            let reason = String(cString: strerror(code))
            if code == EACCES || code == EPERM {
                throw ConnectError(exitCode: Int32(ConnectError.refused), description: "macrod at \(path) refused the connection: \(reason)")
            }
            throw ConnectError(exitCode: Int32(ConnectError.unreachable), description: "no daemon answers at \(path): \(reason)")
        }
        self.fd = fd
    }

    /// Takes `descriptor`, a connected stream socket (one end of a `socketpair(2)`, say), as its
    /// connection; `name` stands for the socket's path in messages. It closes the descriptor.
    public init(connectedDescriptor descriptor: Int32, name: String) {
        path = name
        fd = descriptor
    }

    deinit { close(fd) }

    /// Makes reads give up after `seconds` (0: wait forever); a timed-out read throws.
    public func setReceiveTimeout(seconds: Double) {
        var tv = timeval(tv_sec: Int(seconds), tv_usec: Int((seconds - Double(Int(seconds))) * 1_000_000))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Makes sends give up after `seconds` without progress (0: wait forever); a timed-out send throws.
    public func setSendTimeout(seconds: Double) {
        var tv = timeval(tv_sec: Int(seconds), tv_usec: Int((seconds - Double(Int(seconds))) * 1_000_000))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Shuts down the sending side (the daemon answers what it got, then closes).
    public func shutdownWrite() { shutdown(fd, Int32(SHUT_WR)) }

    /// Sends one raw line (no newline needed).
    public func send(raw line: String) throws {
        var bytes = Array(line.utf8)
        if bytes.last != UInt8(ascii: "\n") { bytes.append(UInt8(ascii: "\n")) }
        try send(bytes: bytes)
    }

    /// Sends raw bytes as they are.
    public func send(bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n < 0 {
                if errno == EINTR { continue }
                throw RPCError(code: RPCError.internalError, message: "the connection to \(path) broke: \(String(cString: strerror(errno)))")
            }
            offset += n
        }
    }

    /// Reads the next line as JSON; nil at end of stream.
    public func readMessage() throws -> MacroValue? {
        guard let line = try readLine() else { return nil }
        return try MacroValue(jsonText: line)
    }

    /// Reads the next raw line; nil at end of stream.
    public func readLine() throws -> String? {
        while true {
            if let newline = buffer[(start + scanned)...].firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffer[start..<newline], as: UTF8.self)
                start = newline + 1
                scanned = 0
                // The returned lines' bytes go once they are half the buffer (no shift per line).
                if start == buffer.count {
                    buffer.removeAll(keepingCapacity: buffer.count <= 1 << 20)
                    start = 0
                } else if start > buffer.count / 2 {
                    buffer.removeSubrange(..<start)
                    start = 0
                }
                return line
            }
            scanned = buffer.count - start
            var chunk = [UInt8](repeating: 0, count: 65536)
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0 {
                if errno == EINTR { continue }
                throw RPCError(code: RPCError.internalError, message: "reading from \(path) failed: \(String(cString: strerror(errno)))")
            }
            if n == 0 {
                if start == buffer.count { return nil }
                let line = String(decoding: buffer[start...], as: UTF8.self)
                buffer.removeAll()
                start = 0
                scanned = 0
                return line
            }
            buffer.append(contentsOf: chunk[..<n])
        }
    }

    /// Calls `method` and returns its result, or throws its ``RPCError``. Notifications that
    /// arrive first are kept in ``pendingNotifications``.
    @discardableResult
    public func call(_ method: RPCMethod, _ params: MacroValue? = nil) throws -> MacroValue {
        try call(method.rawValue, params)
    }

    /// Calls `method` and hands every notification that arrives before the reply to
    /// `onNotification` with the request's id (e.g. the call's `macro.console` output).
    public func call(_ method: RPCMethod, _ params: MacroValue?, onNotification: (MacroValue, MacroValue) -> Void) throws -> MacroValue {
        try call(method.rawValue, params, onNotification: onNotification)
    }

    /// Calls a method by its name (a test of the wire, or a method this version of the table
    /// does not know); see ``call(_:_:)-(RPCMethod,_)``.
    @discardableResult
    public func call(_ method: String, _ params: MacroValue? = nil) throws -> MacroValue {
        try call(method, params) { note, _ in pendingNotifications.append(note) }
    }

    /// Calls `method` and hands every notification that arrives before the reply to
    /// `onNotification` with the request's id (e.g. the call's `macro.console` output).
    public func call(_ method: String, _ params: MacroValue?, onNotification: (MacroValue, MacroValue) -> Void) throws -> MacroValue {
        nextID += 1
        let number = nextID
        let id = MacroValue.number(Double(number))
        try send(raw: RPCCodec.request(id: RPCID(json: String(number)), method: method, params: params).text)
        while true {
            guard let message = try readMessage() else {
                throw RPCError(code: RPCError.internalError, message: "macrod closed the connection before answering \(method)")
            }
            switch RPCCodec.incoming(message) {
            case .notification(let note):
                onNotification(note, id)
            case .response(let replyID, let result):
                // Another request's reply is skipped; an error answered under another id (a line
                // macrod could not read has id null) is this request's.
                if replyID.intValue == number { return try result.get() }
                if case .failure(let error) = result { throw error }
            }
        }
    }

    /// The next notification (from the pending list first, else from the socket); nil at end of stream.
    public func nextNotification() throws -> MacroValue? {
        if !pendingNotifications.isEmpty { return pendingNotifications.removeFirst() }
        while let message = try readMessage() {
            if message["method"] != .undefined, message["id"] == .undefined { return message }
        }
        return nil
    }
}
