import Foundation
import MacroEngineCore

#if canImport(Glibc)
import Glibc
#endif

/// What a stalled macrod hands to the process that replaces it (itself, re-executed): the
/// listening socket, every client connection with its subscriptions and the bytes of an
/// unfinished line, and the files that must not be evaluated again. It travels as a 0600 JSON
/// file next to the socket, named by the environment variable ``environmentKey``; the
/// descriptors stay open across `exec` (their close-on-exec flag is cleared).
struct Handover: Codable, Sendable {
    /// A client connection.
    struct Client: Codable, Sendable {
        var fd: Int32
        /// The socket's cookie when it was handed over: the client may hang up, and its
        /// descriptor number be reused, before the exec (see ``take()``).
        var cookie: UInt64? = nil
        var subscriptions: [String]
        var pendingInput: [UInt8]
    }

    /// The listening socket (nil when the stall came before macrod listened).
    var listener: Int32?
    var clients: [Client] = []
    var quarantine = Quarantine()
    /// Restarts so far, with their times (uptime seconds of the machine), for the restart budget.
    var restarts: [Double] = []
    /// Every restart since macrod was started (not only the budget window's): `macroengine_engine_restarts_total`.
    var totalRestarts = 0
    /// Why the last restart happened (logged by the new process).
    var reason: String = ""
    /// When the stall was noticed (wall clock, seconds since 1970): the new process logs the time to serve again.
    var stalledAt: Double = 0

    static let environmentKey = "MACROD_HANDOVER"

    /// Writes the file, clears close-on-exec on the descriptors, and replaces this process with a
    /// fresh macrod (same executable, same arguments). Returns only when `exec` failed.
    func execute(directory: String) -> String {
        let path = "\(directory)/macrod.handover.\(getpid()).json"
        do {
            let data = try JSONEncoder().encode(self)
            let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
            guard fd >= 0 else { return "cannot write \(path): \(String(cString: strerror(errno)))" }
            defer { close(fd) }
            let written = data.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            guard written == data.count else { return "cannot write \(path)" }
        } catch {
            return "cannot encode the hand-over: \(error)"
        }
        for fd in ([listener].compactMap { $0 } + clients.map(\.fd)) {
            _ = fcntl(fd, F_SETFD, 0)
        }
        setenv(Self.environmentKey, path, 1)
        let arguments = CommandLine.arguments
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        execv("/proc/self/exe", &argv)
        return "exec /proc/self/exe failed: \(String(cString: strerror(errno)))"
    }

    /// The hand-over this process was started with, if any (the file is removed and the
    /// variable cleared, so a later restart starts clean).
    static func take() -> Handover? {
        guard let path = ProcessInfo.processInfo.environment[environmentKey] else { return nil }
        unsetenv(environmentKey)
        defer { unlink(path) }
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        var handover = try? JSONDecoder().decode(Handover.self, from: data)
        // A client that hung up while the old process was handing over had its descriptor closed
        // (and its number possibly reused, or free for this process's own event loops to take):
        // only a descriptor that is still the same socket is adopted.
        handover?.clients.removeAll { client in client.cookie.map { SocketCookie.of(client.fd) != $0 } ?? false }
        // Descriptors we inherit must not leak into whatever this process runs later.
        let kept = Set([handover?.listener].compactMap { $0 } + (handover?.clients.map(\.fd) ?? []))
        for fd in kept { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        // swift-nio does not open its sockets close-on-exec: every other socket of the stalled
        // process (connections not handed over, its event loops' own) came along; close them, so
        // restarts cannot pile up descriptors and clients of closed ones see the end.
        for (_, fd) in SocketCookie.descriptorsByCookie() where fd > 2 && !kept.contains(fd) { close(fd) }
        return handover
    }
}
