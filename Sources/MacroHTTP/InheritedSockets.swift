import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A macrod that replaced a stalled one (the same process image executed again) inherits the old
/// process's TCP descriptors: swift-nio does not open them close-on-exec. The old dashboard's
/// listener and its WebSocket connections would stay open unserved: pages would wait on them
/// forever, and the port could not be bound again. They are closed before the dashboard listens.
enum InheritedSockets {
    /// Closes every TCP socket of this process whose local port is `port`; returns how many.
    /// Call it before this process opens a socket on that port itself.
    @discardableResult
    static func closeTCP(localPort port: Int) -> Int {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") else { return 0 }
        var closed = 0
        for entry in entries {
            guard let fd = Int32(entry), fd > 2 else { continue }
            var storage = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let named = withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
            }
            guard named == 0, isTCP(fd) else { continue }
            let local: Int
            switch Int32(storage.ss_family) {
            case AF_INET:
                local = withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin_port)) } }
            case AF_INET6:
                local = withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin6_port)) } }
            default:
                continue
            }
            if local == port, close(fd) == 0 { closed += 1 }
        }
        return closed
    }

    private static func isTCP(_ fd: Int32) -> Bool {
        var type: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        return getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &length) == 0 && type == Int32(SOCK_STREAM.rawValue)
    }
}
