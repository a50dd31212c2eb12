#if canImport(Glibc)
import Glibc
#endif

/// Linux's socket cookie (`SO_COOKIE`): a number the kernel gives each socket, stable for its
/// life. NIO does not expose a channel's descriptor, so the restart finds the descriptors to hand
/// over by reading the cookie of every socket descriptor of the process and matching.
enum SocketCookie {
    /// `SO_COOKIE` (include/uapi/asm-generic/socket.h).
    static let option: Int32 = 57

    /// The cookie of descriptor `fd`, nil when it is not a socket.
    static func of(_ fd: Int32) -> UInt64? {
        var cookie: UInt64 = 0
        var length = socklen_t(MemoryLayout<UInt64>.size)
        guard getsockopt(fd, SOL_SOCKET, option, &cookie, &length) == 0 else { return nil }
        return cookie
    }

    /// Every open descriptor of this process that is a socket, by cookie.
    static func descriptorsByCookie() -> [UInt64: Int32] {
        guard let dir = opendir("/proc/self/fd") else { return [:] }
        defer { closedir(dir) }
        var found: [UInt64: Int32] = [:]
        while let entry = readdir(dir) {
            let name = withUnsafePointer(to: entry.pointee.d_name) { pointer in
                pointer.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            guard let fd = Int32(name), let cookie = of(fd) else { continue }
            found[cookie] = fd
        }
        return found
    }
}
