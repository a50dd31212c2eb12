import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Where macrod listens: `--socket`, else `$MACROENGINE_SOCKET`, else
/// `$XDG_RUNTIME_DIR/macroengine/macrod.sock`, else `/tmp/macroengine-$UID/macrod.sock`.
public enum SocketPath {
    /// The socket path clients and the daemon use when no `--socket` is given.
    public static func `default`(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let explicit = environment["MACROENGINE_SOCKET"], !explicit.isEmpty { return explicit }
        if let runtime = environment["XDG_RUNTIME_DIR"], !runtime.isEmpty { return "\(runtime)/macroengine/macrod.sock" }
        return "/tmp/macroengine-\(getuid())/macrod.sock"
    }

    /// Resolves an explicit path or the default.
    public static func resolve(_ explicit: String?, environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let explicit, !explicit.isEmpty { return explicit }
        return `default`(environment: environment)
    }

    /// The longest path a Unix socket address holds (sun_path minus the NUL).
    public static let maximumLength = 107

    /// A reason the socket's directory cannot be used.
    public struct DirectoryError: Error, CustomStringConvertible, Sendable {
        /// What is wrong.
        public var description: String
    }

    /// Creates the socket's directory (0700) when missing; refuses one owned by another user or
    /// open to others (the daemon's socket would be reachable or replaceable by them).
    public static func prepareDirectory(for socket: String) throws(DirectoryError) {
        let directory = (socket as NSString).deletingLastPathComponent
        guard !directory.isEmpty else { return }
        var info = stat()
        if stat(directory, &info) != 0 {
            guard errno == ENOENT else {
                throw DirectoryError(description: "cannot use \(directory): \(String(cString: strerror(errno)))")
            }
            let parent = (directory as NSString).deletingLastPathComponent
            if !parent.isEmpty, !FileManager.default.fileExists(atPath: parent) {
                try? FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            }
            guard mkdir(directory, 0o700) == 0 || errno == EEXIST else {
                throw DirectoryError(description: "cannot create \(directory): \(String(cString: strerror(errno)))")
            }
            guard stat(directory, &info) == 0 else {
                throw DirectoryError(description: "cannot use \(directory): \(String(cString: strerror(errno)))")
            }
        }
        guard (info.st_mode & S_IFMT) == S_IFDIR else {
            throw DirectoryError(description: "\(directory) is not a directory")
        }
        guard info.st_uid == getuid() else {
            throw DirectoryError(description: "refusing to use \(directory): it is owned by uid \(info.st_uid), not by you (uid \(getuid())); remove it or set --socket / MACROENGINE_SOCKET")
        }
        // Only the socket's own private directory (…/macroengine, /tmp/macroengine-UID) must be
        // 0700; a directory named explicitly may be shared with the user's group.
        if info.st_mode & 0o002 != 0 {
            throw DirectoryError(description: "refusing to use \(directory): it is writable by every user (mode \(String(info.st_mode & 0o777, radix: 8))); chmod 700 it")
        }
    }
}
