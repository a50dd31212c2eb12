import MacroRPC

#if canImport(Glibc)
import Glibc
#endif

/// The socket's place in the file system, before anything else starts: its directory (0700),
/// and a socket left by a macrod that is gone; never one where a daemon answers.
enum SocketFile {
    /// Prepares the directory of `path` and, unless the listening socket was handed over by an
    /// engine restart (`inherited`), clears a stale socket. Throws ``MacroDaemonError``.
    static func prepare(_ path: String, inherited: Bool) throws {
        do {
            try SocketPath.prepareDirectory(for: path)
        } catch {
            throw MacroDaemonError(code: .permission, message: error.description)
        }
        if !inherited { try clearStale(path) }
    }

    /// Refuses a socket path where a daemon answers or that is not a socket; removes a stale one.
    static func clearStale(_ path: String) throws {
        var info = stat()
        guard lstat(path, &info) == 0 else { return }
        guard (info.st_mode & S_IFMT) == S_IFSOCK else {
            throw MacroDaemonError(code: .permission, message: "\(path) exists and is not a socket; not touching it")
        }
        do {
            _ = try RPCClient(path: path)
            throw MacroDaemonError(code: .alreadyRunning, message: "another macrod is already listening on \(path)")
        } catch let error as RPCClient.ConnectError where error.exitCode == Int32(RPCClient.ConnectError.unreachable) {
            unlink(path)
        } catch let error as RPCClient.ConnectError {
            throw MacroDaemonError(code: .permission, message: "\(path): \(error.description)")
        }
    }
}
