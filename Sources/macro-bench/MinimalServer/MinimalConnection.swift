#if canImport(Glibc)
import Glibc
#endif

/// One client of the minimal server: the bytes read and not yet served, and the replies not yet
/// written (this tick's, or an earlier tick's left over by a write that did not finish).
final class MinimalConnection {
    /// The socket (non-blocking); -1 once closed.
    private(set) var fd: Int32
    /// Read bytes; the first `filled` are not served yet (at most a partial line after a tick).
    private(set) var input: UnsafeMutableRawBufferPointer
    private(set) var filled = 0
    /// Reply lines; the first `sent` bytes are already written.
    var output: [UInt8] = []
    private var sent = 0
    /// The client shut its side down: close once the replies are written.
    var peerClosed = false
    /// On the event loop's list of connections to flush at the end of this tick.
    var inTick = false
    /// The epoll events the socket is registered for.
    var interest: UInt32

    init(fd: Int32, interest: UInt32) {
        self.fd = fd
        self.interest = interest
        input = .allocate(byteCount: 16 * 1024, alignment: 1)
        output.reserveCapacity(4 * 1024)
    }

    deinit { input.deallocate() }

    var isOpen: Bool { fd >= 0 }

    /// Whether the last write did not finish: the rest waits for the socket to take it (EPOLLOUT).
    private(set) var waitsForWritable = false

    /// One read into the free end of the input (which doubles when full): the byte count, 0 at
    /// the end of the stream, -1 with errno on failure.
    func readOnce() -> Int {
        if filled == input.count {
            let larger = UnsafeMutableRawBufferPointer.allocate(byteCount: input.count * 2, alignment: 1)
            larger.copyMemory(from: UnsafeRawBufferPointer(input))
            input.deallocate()
            input = larger
        }
        let count = read(fd, input.baseAddress! + filled, input.count - filled)
        if count > 0 { filled += count }
        return count
    }

    /// Calls `body` with each complete line read (without its newline), then keeps only the
    /// partial line after them. The lines point into the input: `body` must not keep them.
    func forEachLine(_ body: (UnsafeBufferPointer<UInt8>) -> Void) {
        let base = UnsafeMutablePointer<UInt8>(OpaquePointer(input.baseAddress!))
        var start = 0
        while start < filled, let newline = memchr(base + start, Int32(UInt8(ascii: "\n")), filled - start) {
            let end = UnsafeMutablePointer<UInt8>(OpaquePointer(newline)) - base
            body(UnsafeBufferPointer(start: base + start, count: end - start))
            start = end + 1
        }
        if start > 0 {
            if start < filled { memmove(base, base + start, filled - start) }
            filled -= start
        }
    }

    /// One write of the replies not yet written: true when all are, false when the socket took
    /// only part (the rest waits for EPOLLOUT), nil when the write failed.
    func writeReplies() -> Bool? {
        if sent < output.count {
            let count = output.withUnsafeBytes { write(fd, $0.baseAddress! + sent, $0.count - sent) }
            if count < 0, errno != EAGAIN, errno != EINTR { return nil }
            sent += max(0, count)
        }
        waitsForWritable = sent < output.count
        guard !waitsForWritable else { return false }
        output.removeAll(keepingCapacity: true)
        sent = 0
        return true
    }

    /// Closes the socket (which also takes it out of the epoll set).
    func close() {
        guard fd >= 0 else { return }
        _ = Glibc.close(fd)
        fd = -1
    }
}
