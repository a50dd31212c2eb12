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

    /// The sockets of `descriptors` (by cookie, ``descriptorsByCookie()``) accepted on the
    /// listening socket `listener` whose cookies are not in `known`: connections no handler has
    /// seen (accepted on a loop that stalled in the same wake-up, so never active). Nothing has
    /// read from them: whatever their clients sent waits in the socket. Sorted by descriptor.
    static func unadopted(_ descriptors: [UInt64: Int32], listener: Int32, known: Set<UInt64>) -> [(fd: Int32, cookie: UInt64)] {
        guard let path = boundPath(listener) else { return [] }
        return descriptors.filter { cookie, fd in
            fd != listener && !known.contains(cookie) && !isListening(fd) && boundPath(fd) == path
        }.map { (fd: $0.value, cookie: $0.key) }.sorted { $0.fd < $1.fd }
    }

    /// The path a Unix socket is bound to (an accepted one: its listener's), nil for others.
    static func boundPath(_ fd: Int32) -> String? {
        var address = sockaddr_un()
        var length = socklen_t(MemoryLayout<sockaddr_un>.size)
        let got = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard got == 0, address.sun_family == sa_family_t(AF_UNIX), Int(length) > MemoryLayout<sa_family_t>.size else { return nil }
        let path = withUnsafeBytes(of: address.sun_path) { bytes in
            String(decoding: bytes.prefix(Int(length) - MemoryLayout<sa_family_t>.size).prefix { $0 != 0 }, as: UTF8.self)
        }
        return path.isEmpty ? nil : path
    }

    /// Whether `fd` is a listening socket (`SO_ACCEPTCONN`).
    static func isListening(_ fd: Int32) -> Bool {
        var value: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        return getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &value, &length) == 0 && value != 0
    }
}
