import MacroEngineCore
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// What macrod's request handling reads from its config while it runs; a SIGHUP or the
/// dashboard may change it.
package struct HostSettings: Sendable {
    /// `engine_eval`: whether `engine.eval` is answered.
    var engineEval: Bool
    /// `queue_limit`: requests that may wait for the engine before -32005.
    var queueLimit: Int
    /// The socket path `engine.status` reports.
    var socket: String
    /// `fsync`: when the state journal is made durable.
    var fsync: FsyncPolicy = .interval
    /// The mode of a file `macro.save` creates: 0666 less the umask macrod started with.
    var newFileMode: mode_t = 0o644
    /// The dashboard's URL with its token (nil: no dashboard).
    var dashboard: String?
    /// `history_versions`, `history_bytes`: how much of the version history is kept.
    package var history = HistoryLimits()
    /// `audit_entries`: how many audit events are kept.
    package var auditEntries = 10_000
    /// When macrod started (``HostSettings/bootNanoseconds()``), what `engine.status`'s uptime
    /// counts from: the first process's start, which an engine restart (a re-exec) hands over.
    var started = HostSettings.bootNanoseconds()

    /// Settings with the defaults of a config; `socket` is what `engine.status` reports.
    package init(engineEval: Bool = false, queueLimit: Int = 1024, socket: String, fsync: FsyncPolicy = .interval, newFileMode: mode_t = 0o644) {
        self.engineEval = engineEval
        self.queueLimit = queueLimit
        self.socket = socket
        self.fsync = fsync
        self.newFileMode = newFileMode
    }
}

extension HostSettings {
    /// Nanoseconds since the machine booted, suspended time included (CLOCK_BOOTTIME, the clock
    /// of Swift's `ContinuousClock` on Linux): one clock for every process, so an instant read by
    /// macrod before an engine restart still means the same after the exec.
    static func bootNanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_BOOTTIME, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }
}

/// The settings, shared by the parts of the host that read them (any thread).
final class SettingsBox: Sendable {
    private let state: Mutex<HostSettings>

    init(_ settings: HostSettings) { state = Mutex(settings) }

    /// One consistent read.
    func read<T>(_ body: (HostSettings) -> T) -> T { state.withLock { body($0) } }

    /// Changes them.
    func update(_ body: (inout HostSettings) -> Void) { state.withLock { body(&$0) } }
}

/// The counts `engine.status` reports (any thread).
final class RequestCounters: Sendable {
    private let callCount = Atomic<Int>(0)
    private let errorCount = Atomic<Int>(0)

    /// `macro.call`s started.
    var calls: Int { callCount.load(ordering: .relaxed) }
    /// Requests answered with an error.
    var errors: Int { errorCount.load(ordering: .relaxed) }

    func countCall() { callCount.add(1, ordering: .relaxed) }
    func countError() { errorCount.add(1, ordering: .relaxed) }
}
