import NIOCore
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// What the engine's thread is doing, readable from any thread: when its current outermost entry
/// into JavaScript began, the budget of that entry, the call it serves, the file it loads, and
/// whether that call was cancelled. The engine writes it at the start and end of every outermost
/// entry; ``StallWatch`` reads it to notice an engine that JavaScriptCore itself cannot stop.
public final class EngineOccupancy: Sendable {
    /// One reading.
    public struct Snapshot: Sendable, Equatable {
        /// When the entry began (uptime nanoseconds); nil while the engine is idle in its loop.
        public var since: UInt64?
        /// The entry's budget: the time limit, or what was left of the call's deadline.
        public var budgetNanoseconds: UInt64
        /// The call being served (0: none, e.g. loading a file).
        public var call: Int
        /// The macro or lib file being evaluated at load, if that is what the entry does.
        public var loadingFile: String?
        /// The content hash of the source being evaluated at load (FNV-1a 64; see ``Quarantine``):
        /// it may differ from the file on disk (`macro.save` checks a source before writing it).
        public var loadingHash: UInt64? = nil
        /// When a cancel of ``call`` was requested during this entry (uptime nanoseconds).
        public var cancelledAt: UInt64?
        /// The file whose code the entry runs (see ``CodeOwner``): nil for the engine's own runs
        /// and `engine.eval`.
        public var owner: CodeOwner? = nil

        /// The engine thread's CPU time (nanoseconds) when the watchdog last reached the running
        /// JavaScript (nil: never in this entry), or `.max` while it judges memory.
        public var watchdogSeen: UInt64? = nil

        /// Whether the watchdog reaches the entry: it ticked within the last `window` nanoseconds
        /// of the engine thread's CPU time (`engineCPU`), or is judging memory now. Its own
        /// memory verdict, in-process, then comes first. CPU time, like JavaScriptCore's own
        /// limit: while a collection makes the thread wait, neither counts.
        public func watchdogReaches(engineCPU: UInt64, window: UInt64) -> Bool {
            guard let seen = watchdogSeen else { return false }
            return seen == .max || engineCPU &- seen <= window
        }

        /// Creates a reading (the engine makes them; tests too).
        public init(since: UInt64?, budgetNanoseconds: UInt64, call: Int, loadingFile: String?, cancelledAt: UInt64?) {
            self.since = since
            self.budgetNanoseconds = budgetNanoseconds
            self.call = call
            self.loadingFile = loadingFile
            self.cancelledAt = cancelledAt
        }
    }

    private let since = Atomic<UInt64>(0)
    /// When the last outermost entry of a call ended (uptime nanoseconds; engine thread).
    private let lastEndStorage = Atomic<UInt64>(0)
    private let budget = Atomic<UInt64>(0)
    private let call = Atomic<Int>(0)
    private let cancelledAt = Atomic<UInt64>(0)
    private let loading = Mutex<(file: String, hash: UInt64)?>(nil)
    private let owner = Mutex<CodeOwner?>(nil)
    private let lastEntryNanoseconds = Atomic<UInt64>(0)
    private let lastEntryCall = Atomic<Int>(0)
    private let watchdogSeen = Atomic<UInt64>(0)
    private let memoryStop = Atomic<Int>(0)

    /// Held while an outermost entry ends, and by a thread acting for the engine only while one
    /// entry lasts (``whileEntry(_:_:)``): such a thread never acts across the end of its entry.
    private let gate = Mutex<Void>(())
    /// Called on the engine's thread right after each outermost entry ended (see
    /// ``observeEntryEnds(_:)``); nil: nobody.
    private let endObserver = Mutex<CallbackBox<@Sendable () -> Void>?>(nil)
    private let observed = Atomic<Bool>(false)

    /// Runs `body` under the entry gate while the entry that began at `since` (a
    /// ``Snapshot/since``) still occupies the engine; false (and `body` not run) once it ended.
    /// The engine cannot end that entry while `body` runs.
    public func whileEntry(_ since: UInt64, _ body: () -> Void) -> Bool {
        gate.locked { _ in
            guard self.since.load(ordering: .acquiring) == since else { return false }
            body()
            return true
        }
    }

    /// Runs `body` under the entry gate (no entry can end meanwhile).
    public func withGate<T>(_ body: () -> T) -> T { gate.locked { _ in body() } }

    /// `observer` runs on the engine's thread after every outermost entry ended, before the
    /// engine returns to its loop (one observer; set once, before the engine serves).
    public func observeEntryEnds(_ observer: @escaping @Sendable () -> Void) {
        endObserver.locked { $0 = CallbackBox(observer) }
        observed.store(true, ordering: .releasing)
    }

    /// The CPU-time clock of the engine's thread (set once, when its runtime is made there).
    private let engineClock = Atomic<Int32>(-1)

    /// Creates an idle record.
    public init() {}

    /// Records the calling thread as the engine's (its CPU-time clock).
    func adoptEngineThread() {
        var clock = clockid_t()
        if pthread_getcpuclockid(pthread_self(), &clock) == 0 { engineClock.store(clock, ordering: .relaxed) }
    }

    /// The engine thread's CPU time in nanoseconds, readable from any thread (0: unknown).
    public var engineCPUNanoseconds: UInt64 {
        let clock = engineClock.load(ordering: .relaxed)
        guard clock != -1 else { return 0 }
        return Self.cpuNanoseconds(clock)
    }

    static func cpuNanoseconds(_ clock: clockid_t) -> UInt64 {
        var time = timespec()
        guard clock_gettime(clock, &time) == 0 else { return 0 }
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }

    /// Uptime in nanoseconds (the clock every field uses).
    public static func now() -> UInt64 { UInt64(NIODeadline.now().uptimeNanoseconds) }

    /// The current state.
    public var snapshot: Snapshot {
        let start = since.load(ordering: .acquiring)
        let cancelled = cancelledAt.load(ordering: .relaxed)
        let hash = loading.locked { $0?.hash }
        var reading = Snapshot(
            since: start == 0 ? nil : start,
            budgetNanoseconds: budget.load(ordering: .relaxed),
            call: call.load(ordering: .relaxed),
            loadingFile: loading.locked { $0?.file },
            cancelledAt: cancelled == 0 ? nil : cancelled)
        reading.loadingHash = hash
        reading.owner = owner.locked { $0 }
        let seen = watchdogSeen.load(ordering: .relaxed)
        if start != 0, seen != 0 { reading.watchdogSeen = seen }
        return reading
    }

    /// An outermost entry starts (engine thread) at uptime `now`.
    func begin(budget nanoseconds: UInt64, call id: Int, owner current: CodeOwner?, now: UInt64 = EngineOccupancy.now()) {
        owner.locked { $0 = current }
        budget.store(nanoseconds, ordering: .relaxed)
        call.store(id, ordering: .relaxed)
        cancelledAt.store(0, ordering: .relaxed)
        watchdogSeen.store(0, ordering: .relaxed)
        memoryStop.store(0, ordering: .relaxed)
        since.store(max(1, now), ordering: .releasing)
    }

    /// Asks the watchdog to stop the current entry for the memory it grew (any thread; the stall
    /// watch, which measures the process): `resident` is the process's size, for the message.
    func requestMemoryStop(resident: Int) {
        memoryStop.store(max(1, resident), ordering: .relaxed)
    }

    /// The watchdog found the requested stop unwarranted (the growth was garbage).
    func clearMemoryStop() {
        memoryStop.store(0, ordering: .relaxed)
    }

    /// The resident size a memory stop of the current entry was requested at (nil: none).
    var requestedMemoryStop: Int? {
        let resident = memoryStop.load(ordering: .relaxed)
        return resident == 0 ? nil : resident
    }

    /// The watchdog reached the running JavaScript (engine thread, at a tick): `judging` while
    /// it runs its memory verdict, false once done.
    func watchdogTick(judging: Bool = false) {
        watchdogSeen.store(judging ? .max : max(1, Self.cpuNanoseconds(CLOCK_THREAD_CPUTIME_ID)), ordering: .relaxed)
    }

    /// When the last outermost entry of a call ended, as ``end()`` read it (uptime
    /// nanoseconds; read it on the engine thread, right after the entry).
    var lastEnd: UInt64 { lastEndStorage.load(ordering: .relaxed) }

    /// The outermost entry returned to Swift (engine thread).
    func end() {
        // Kept for the per-macro statistics (time in JavaScript): read and cleared by takeLastEntry().
        // Entries of no call (jobs left queued, a file loading) do not replace a call's; further
        // entries of the same call before the take add up.
        let current = call.load(ordering: .relaxed)
        if current != 0 {
            let now = Self.now()
            lastEndStorage.store(now, ordering: .relaxed)
            let elapsed = now &- since.load(ordering: .relaxed)
            if lastEntryCall.exchange(current, ordering: .relaxed) == current {
                lastEntryNanoseconds.add(elapsed, ordering: .relaxed)
            } else {
                lastEntryNanoseconds.store(elapsed, ordering: .relaxed)
            }
        }
        if observed.load(ordering: .acquiring) {
            gate.locked { _ in since.store(0, ordering: .releasing) }
            endObserver.locked { $0 }?.call()
        } else {
            since.store(0, ordering: .releasing)
        }
        call.store(0, ordering: .relaxed)
        cancelledAt.store(0, ordering: .relaxed)
    }

    /// The last call's outermost entries that ended since the previous take: the call they served
    /// and how long they ran in all, in nanoseconds; then cleared, so each entry is taken once
    /// (nanoseconds 0: none since). Read on
    /// the engine's loop after a turn (``MacroEngine/onTurnEnd(_:)``).
    public func takeLastEntry() -> (call: Int, nanoseconds: UInt64) {
        let nanoseconds = lastEntryNanoseconds.exchange(0, ordering: .relaxed)
        return (lastEntryCall.load(ordering: .relaxed), nanoseconds)
    }

    /// Names the file being evaluated at load (nil when done).
    func setLoading(_ file: String?, source: String = "") {
        setLoading(file, hash: file == nil ? 0 : Quarantine.hash(Array(source.utf8)))
    }

    /// ``setLoading(_:source:)`` with the content's hash known.
    func setLoading(_ file: String?, hash: UInt64) {
        loading.locked { $0 = file.map { ($0, hash) } }
    }

    /// A cancel of call `id` was requested (any thread): recorded when that call occupies the engine.
    func noteCancel(of id: Int) {
        guard id != 0, call.load(ordering: .relaxed) == id, since.load(ordering: .acquiring) != 0 else { return }
        _ = cancelledAt.compareExchange(expected: 0, desired: Self.now(), ordering: .relaxed)
    }
}
