import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// systemd's notify protocol (`sd_notify(3)`), for `Type=notify` and `WatchdogSec=`: datagrams
/// such as `READY=1` and `WATCHDOG=1` to `$NOTIFY_SOCKET`. Without that variable (not started by
/// systemd) every call does nothing.
final class SystemdNotifier: Sendable {
    private let socketPath: String?
    /// `READY=1` was sent: heartbeats may follow.
    private let ready = Atomic<Bool>(false)
    /// Half of `$WATCHDOG_USEC` (systemd's advice), nil when systemd watches nothing.
    let heartbeatInterval: Duration?
    private let lastBeat = Mutex<ContinuousClock.Instant?>(nil)

    init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        socketPath = environment["NOTIFY_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
        let watchdogPID = environment["WATCHDOG_PID"].flatMap { Int32($0) }
        if let usec = environment["WATCHDOG_USEC"].flatMap({ Int64($0) }), usec > 0, watchdogPID == nil || watchdogPID == getpid() {
            heartbeatInterval = .microseconds(usec / 2)
        } else {
            heartbeatInterval = nil
        }
    }

    /// Sends one state string (`READY=1`, `STATUS=...`, `WATCHDOG=1`).
    func notify(_ state: String) {
        if state.hasPrefix("READY=1") { ready.store(true, ordering: .releasing) }
        guard let socketPath else { return }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var pathBytes = Array(socketPath.utf8)
        if pathBytes.first == UInt8(ascii: "@") { pathBytes[0] = 0 }  // abstract namespace
        guard pathBytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: pathBytes)
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + pathBytes.count)
        _ = state.withCString { text in
            withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(fd, text, strlen(text), Int32(MSG_NOSIGNAL), $0, length)
                }
            }
        }
    }

    /// `WATCHDOG=1`, at most once per ``heartbeatInterval``, and only while `healthy`: a daemon
    /// whose engine is stuck and cannot recover stops beating, and systemd restarts it.
    func heartbeat(healthy: Bool) {
        // Not before READY=1: the stall watch ticks while macrod still loads its macros.
        guard healthy, ready.load(ordering: .acquiring), let interval = heartbeatInterval else { return }
        let now = ContinuousClock.now
        let due = lastBeat.locked { last -> Bool in
            guard last.map({ now - $0 >= interval }) ?? true else { return false }
            last = now
            return true
        }
        if due { notify("WATCHDOG=1") }
    }
}
