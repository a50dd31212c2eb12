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

    /// The token kept in `path` by a previous process of this daemon, if the file is a regular
    /// 0600 file of this user holding 64 hex digits.
    init?(readingFrom path: String) {
        var info = stat()
        guard lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, info.st_uid == getuid(), info.st_mode & 0o077 == 0,
            let text = try? String(contentsOfFile: path, encoding: .utf8)
        else { return nil }
        let value = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard value.count == 64, value.allSatisfy(\.isHexDigit) else { return nil }
        self.value = value
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

    /// Where the dashboard's address (without the token) is noted beside the token, so that a
    /// macrod replacing a stalled one listens on the same port: `macrod.sock` -> `macrod.dashboard`.
    static func addressPath(forSocket socketPath: String) -> String {
        String(filePath(forSocket: socketPath).dropLast(".token".count)) + ".dashboard"
    }

    /// Where the port the dashboard last listened on is kept (`macrod.port`, no secret, kept
    /// across restarts): with `http: "127.0.0.1:0"` the next macrod takes the same port when it
    /// is free, so an open page finds it again.
    static func portPath(forSocket socketPath: String) -> String {
        String(filePath(forSocket: socketPath).dropLast(".token".count)) + ".port"
    }

    /// Removes the token and address files a macrod that ended without its shutdown (exit 70,
    /// `kill -9`) left beside `socketPath`, when this one serves no dashboard.
    static func removeStale(forSocket socketPath: String) {
        unlink(filePath(forSocket: socketPath))
        unlink(addressPath(forSocket: socketPath))
    }

    /// Writes the token to `path`, mode 0600 (an existing file is replaced, not followed if it is a symlink).
    func write(to path: String) throws(DashboardError) {
        try Self.writePrivate(value + "\n", to: path)
    }

    /// Writes `text` to a new 0600 file at `path` (replacing one, never following a symlink).
    static func writePrivate(_ text: String, to path: String) throws(DashboardError) {
        unlink(path)
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw DashboardError(code: .tokenFile, message: "cannot write the dashboard token to \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        let bytes = Array(text.utf8)
        guard fchmod(fd, 0o600) == 0, bytes.withUnsafeBytes({ Glibc.write(fd, $0.baseAddress, $0.count) }) == bytes.count else {
            throw DashboardError(code: .tokenFile, message: "cannot write the dashboard token to \(path): \(String(cString: strerror(errno)))")
        }
    }
}
