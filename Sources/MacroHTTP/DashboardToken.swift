import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The dashboard's secret: 256 random bits as 64 hex digits, made at start and kept in a 0600
/// file beside the socket, so only the socket's owner (who can also ask `engine.status`) reads it.
struct DashboardToken: Sendable {
    /// The token's text.
    let value: String

    /// A new random token.
    init() {
        var generator = SystemRandomNumberGenerator()
        value = (0..<4).map { _ in
            let word = generator.next() as UInt64
            let hex = String(word, radix: 16)
            return String(repeating: "0", count: 16 - hex.count) + hex
        }.joined()
    }

    /// Compares in constant time (no early exit on the first differing byte).
    func matches(_ candidate: some StringProtocol) -> Bool {
        let a = Array(value.utf8), b = Array(candidate.utf8)
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for index in a.indices { difference |= a[index] ^ b[index] }
        return difference == 0
    }

    /// Where the token of the daemon on `socketPath` is kept: `macrod.sock` -> `macrod.token`.
    static func filePath(forSocket socketPath: String) -> String {
        let url = URL(fileURLWithPath: socketPath)
        let base = url.pathExtension == "sock" ? url.deletingPathExtension() : url
        return base.path + ".token"
    }

    /// Writes the token to `path`, mode 0600 (an existing file is replaced, not followed if it is a symlink).
    func write(to path: String) throws(DashboardError) {
        unlink(path)
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw DashboardError(code: .tokenFile, message: "cannot write the dashboard token to \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        let bytes = Array((value + "\n").utf8)
        guard fchmod(fd, 0o600) == 0, bytes.withUnsafeBytes({ Glibc.write(fd, $0.baseAddress, $0.count) }) == bytes.count else {
            throw DashboardError(code: .tokenFile, message: "cannot write the dashboard token to \(path): \(String(cString: strerror(errno)))")
        }
    }
}
