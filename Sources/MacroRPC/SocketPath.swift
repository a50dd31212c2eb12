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
            throw DirectoryError(
                description: "refusing to use \(directory): it is owned by uid \(info.st_uid), not by you (uid \(getuid())); remove it or set --socket / MACROENGINE_SOCKET")
        }
        // Whoever may write to the directory may remove the socket and put their own in its
        // place: refused when every user may, or the group may without the sticky bit (which
        // keeps others from removing what they do not own). A directory only readable by the
        // group may be shared with it.
        let mode = String(info.st_mode & 0o7777, radix: 8)
        if info.st_mode & 0o002 != 0 {
            throw DirectoryError(description: "refusing to use \(directory): it is writable by every user (mode \(mode)); chmod 700 it")
        }
        if info.st_mode & 0o020 != 0, info.st_mode & 0o1000 == 0 {
            throw DirectoryError(
                description:
                    "refusing to use \(directory): its group may write to it (mode \(mode)) and could replace the socket; chmod g-w it (or chmod +t to keep group members from removing your files)"
            )
        }
    }
}
