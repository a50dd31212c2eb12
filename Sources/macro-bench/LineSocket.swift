#if canImport(Glibc)
import Glibc
#endif

/// A blocking Unix-socket client that sends a request and reads until its reply is complete.
/// Deliberately minimal (one write, reads into a reused buffer, no parsing beyond the framing) so
/// the client costs the same for every server it measures.
final class BlockingSocket {
    let fd: Int32
    private var buffer = [UInt8](repeating: 0, count: 64 * 1024)
    private var filled = 0

    /// Connects to `path`, retrying for up to `timeout` seconds while the server starts.
    init(path: String, timeout: Double = 10) throws {
        let start = monotonicSeconds()
        while true {
            let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else { throw BenchError("socket(): \(String(cString: strerror(errno)))") }
            let result = withUnixAddress(path) { connect(fd, $0, $1) }
            if result == 0 {
                self.fd = fd
                return
            }
            let code = errno
            close(fd)
            if monotonicSeconds() - start > timeout {
                throw BenchError("cannot connect to \(path): \(String(cString: strerror(code)))")
            }
            usleep(10_000)
        }
    }

    deinit { close(fd) }

    /// Writes all of `bytes`.
    func send(_ bytes: UnsafeRawBufferPointer) throws {
        var offset = 0
        while offset < bytes.count {
            let n = write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if n < 0 {
                if errno == EINTR { continue }
                throw BenchError("write: \(String(cString: strerror(errno)))")
            }
            offset += n
        }
    }

    func send(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { try send($0) }
    }

    /// Reads until `complete` finds a whole reply at the start of the buffer; returns the reply's
    /// bytes (as a copy) and keeps anything after it for the next call.
    @discardableResult
    func receive(_ complete: (UnsafeBufferPointer<UInt8>) -> Int?) throws -> [UInt8] {
        while true {
            let length: Int? = buffer.withUnsafeBufferPointer { complete(UnsafeBufferPointer(rebasing: $0[0..<filled])) }
            if let length {
                let reply = Array(buffer[0..<length])
                buffer.withUnsafeMutableBufferPointer { raw in
                    if filled > length { _ = memmove(raw.baseAddress!, raw.baseAddress! + length, filled - length) }
                }
                filled -= length
                return reply
            }
            if filled == buffer.count { buffer += [UInt8](repeating: 0, count: buffer.count) }
            let n = buffer.withUnsafeMutableBytes { raw in read(fd, raw.baseAddress! + filled, raw.count - filled) }
            if n < 0 {
                if errno == EINTR { continue }
                throw BenchError("read: \(String(cString: strerror(errno)))")
            }
            if n == 0 { throw BenchError("the server closed the connection") }
            filled += n
        }
    }

    /// A whole line (through its newline).
    @Sendable static func line(_ bytes: UnsafeBufferPointer<UInt8>) -> Int? {
        bytes.firstIndex(of: UInt8(ascii: "\n")).map { $0 + 1 }
    }

    /// Exactly `count` bytes.
    static func bytes(_ count: Int) -> @Sendable (UnsafeBufferPointer<UInt8>) -> Int? {
        { $0.count >= count ? count : nil }
    }
}

/// Seconds on the monotonic clock.
func monotonicSeconds() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}

/// Nanoseconds on the monotonic clock.
func monotonicNanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}

/// A failure that stops the benchmark, with what went wrong.
struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Calls `body` with `path` as a `sockaddr_un` (for connect and bind).
func withUnixAddress<R>(_ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
        for (i, byte) in path.utf8.enumerated() where i < raw.count - 1 { raw[i] = byte }
    }
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
    }
}
