import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A bound AF_UNIX datagram socket standing in for systemd's `NOTIFY_SOCKET`: it collects what
/// macrod sends (`READY=1`, `WATCHDOG=1`).
public final class NotifySocket {
    let fd: Int32
    /// Its path, for `NOTIFY_SOCKET`.
    public let path: String

    /// Binds `path` (`@NAME`: NAME in the abstract namespace, no file, as systemd allows);
    /// reads give up after 10 s of silence.
    public init(path: String) throws {
        self.path = path
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(path.utf8)
        let abstract = bytes.first == UInt8(ascii: "@")
        if abstract { bytes[0] = 0 }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        // An abstract name is exactly its bytes (the length says where it ends), as macrod sends to it.
        let length = abstract ? MemoryLayout<sa_family_t>.size + bytes.count : MemoryLayout<sockaddr_un>.size
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(length)) }
        }
        guard bound == 0 else { throw POSIXError(.EADDRINUSE) }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    /// The next datagram (nil after 10 s of silence).
    public func next() -> String? {
        receive(flags: 0)
    }

    /// The next datagram if one is waiting, without blocking.
    func receive(flags: Int32 = Int32(MSG_DONTWAIT)) -> String? {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, flags) }
        return n > 0 ? String(decoding: buffer[..<n], as: UTF8.self) : nil
    }
}
