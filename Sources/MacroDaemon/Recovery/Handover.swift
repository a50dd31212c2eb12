import CSystemShims
import Foundation
import MacroEngineCore

#if canImport(Glibc)
import Glibc
#endif

/// What a stalled macrod hands to the process that replaces it (itself, re-executed): the
/// listening sockets, every client connection with its subscriptions and the bytes it must be
/// fed first (requests to replay, a half-received line), the quarantine, the restart budget, and
/// whether JavaScript is paused or a shutdown had begun.
///
/// It travels in an anonymous in-memory file (`memfd_create`) whose descriptor survives `exec`
/// and is named by the environment variable ``environmentKey``: nothing is written to the socket
/// directory (no path to follow or fill), and nothing is left behind if the process is killed.
/// Its layout: the JSON header's length (8 bytes, little-endian), the JSON header, then every
/// client's bytes one after the other (raw, never encoded: a client may have megabytes queued).
struct Handover: Codable, Sendable {
    /// A client connection.
    struct Client: Codable, Sendable {
        var fd: Int32
        /// The socket's cookie when it was handed over: the client may hang up, and its
        /// descriptor number be reused, before the exec (see ``take()``).
        var cookie: UInt64? = nil
        var subscriptions: [String]
        /// The bytes to feed the connection before reading from it (replayed requests, then an
        /// unfinished line). Not in the JSON: it follows it in the hand-over.
        var pendingInput: [UInt8] = []
        /// How many of the bytes after the header are this client's (in client order).
        var pendingLength = 0

        enum CodingKeys: String, CodingKey { case fd, cookie, subscriptions, pendingLength }
    }

    /// The listening socket (nil when the stall came before macrod listened).
    var listener: Int32?
    /// The dashboard's listening TCP socket, kept so no other process can take its port.
    var httpListener: Int32? = nil
    var clients: [Client] = []
    var quarantine = Quarantine()
    /// Restarts no file answers for, with their times (uptime seconds of the machine): the
    /// restart budget counts these only.
    var restarts: [Double] = []
    /// Every restart since macrod was started: `macroengine_engine_restarts_total`.
    var totalRestarts = 0
    /// JavaScript is paused: the restart budget is spent (see ``StallRecovery``).
    var paused = false
    /// A shutdown (SIGTERM/SIGINT) had begun: the next process shuts down at once after taking over.
    var shuttingDown = false
    /// Why the last restart happened (logged by the new process).
    var reason: String = ""
    /// When macrod started (``HostSettings/bootNanoseconds()``): the first process's start, so
    /// the uptime `engine.status` reports does not begin again at each restart.
    var started: UInt64? = nil
    /// When the stall was noticed (wall clock, seconds since 1970): the new process logs the time to serve again.
    var stalledAt: Double = 0

    static let environmentKey = "MACROD_HANDOVER"

    /// Writes the hand-over, leaves only the handed-over descriptors open across `exec`, and
    /// replaces this process with a fresh macrod (same executable, same arguments). Returns only
    /// when that failed, with the reason.
    func execute() -> String {
        let fd = macroengine_memfd("macrod-handover")
        guard fd >= 0 else { return "cannot create the hand-over (memfd_create): \(String(cString: strerror(errno)))" }
        var header: [UInt8]
        do {
            header = Array(try JSONEncoder().encode(self))
        } catch {
            close(fd)
            return "cannot encode the hand-over: \(error)"
        }
        var length = UInt64(header.count).littleEndian
        let prefix = withUnsafeBytes(of: &length) { Array($0) }
        for part in [prefix, header] + clients.map(\.pendingInput) where !part.isEmpty {
            guard Self.writeAll(part, to: fd) else {
                let reason = String(cString: strerror(errno))
                close(fd)
                return "cannot write the hand-over: \(reason)"
            }
        }
        header.removeAll()
        let kept = Set([fd] + [listener, httpListener].compactMap { $0 } + clients.map(\.fd))
        Self.closeOnExec(allBut: kept)
        setenv(Self.environmentKey, String(fd), 1)
        let arguments = CommandLine.arguments
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        execv("/proc/self/exe", &argv)
        return "exec /proc/self/exe failed: \(String(cString: strerror(errno)))"
    }

    /// Sets close-on-exec on every descriptor but `kept` (and 0-2): swift-nio's epoll, eventfd
    /// and timerfd, the signalfd, /dev/urandom and sockets not handed over must not pile up
    /// across restarts; the kept ones lose the flag.
    static func closeOnExec(allBut kept: Set<Int32>) {
        let open = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd"))?.compactMap(Int32.init) ?? []
        for fd in open where fd > 2 {
            _ = fcntl(fd, F_SETFD, kept.contains(fd) ? 0 : FD_CLOEXEC)
        }
    }

    private static func writeAll(_ bytes: [UInt8], to fd: Int32) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { return false }
            offset += n
        }
        return true
    }

    /// The hand-over this process was started with, if any (its descriptor is closed and the
    /// variable cleared, so a later restart starts clean).
    static func take() -> Handover? {
        guard let text = ProcessInfo.processInfo.environment[environmentKey] else { return nil }
        unsetenv(environmentKey)
        guard let fd = Int32(text), fd > 2 else { return nil }
        defer { close(fd) }
        guard var handover = read(fd) else { return nil }
        // A client that hung up while the old process was handing over had its descriptor closed
        // (and its number possibly reused, or free for this process's own event loops to take):
        // only a descriptor that is still the same socket is adopted.
        handover.clients.removeAll { client in client.cookie.map { SocketCookie.of(client.fd) != $0 } ?? false }
        // Descriptors we inherit must not leak into whatever this process runs later.
        let kept = Set([handover.listener, handover.httpListener].compactMap { $0 } + handover.clients.map(\.fd))
        for fd in kept { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        // Any other socket that came along (the old process set close-on-exec on them, but a
        // descriptor opened while it was handing over may have escaped): clients of closed ones see the end.
        for (_, fd) in SocketCookie.descriptorsByCookie() where fd > 2 && !kept.contains(fd) { close(fd) }
        return handover
    }

    /// Reads a hand-over from `fd` (from its start).
    static func read(_ fd: Int32) -> Handover? {
        guard lseek(fd, 0, SEEK_SET) == 0 else { return nil }
        var all: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { break }
            all += chunk[0..<n]
        }
        guard all.count >= 8 else { return nil }
        let length = all[0..<8].enumerated().reduce(0) { $0 | (Int($1.element) << (8 * $1.offset)) }
        guard length >= 0, all.count >= 8 + length,
            var handover = try? JSONDecoder().decode(Handover.self, from: Data(all[8..<(8 + length)]))
        else { return nil }
        var offset = 8 + length
        for index in handover.clients.indices {
            let count = max(0, min(handover.clients[index].pendingLength, all.count - offset))
            handover.clients[index].pendingInput = Array(all[offset..<(offset + count)])
            offset += count
        }
        return handover
    }
}
