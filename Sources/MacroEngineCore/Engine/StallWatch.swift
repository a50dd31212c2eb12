import Foundation
import Synchronization

/// The last line of defence: a thread of its own that notices when the engine has not come back
/// from JavaScript by its budget plus a grace period, and then hands over to `onStall` (macrod
/// re-executes itself; the CLI reports and exits or re-runs without the file at fault).
///
/// Why this exists: on WebKitGTK 2.50.6 every promise job drained at API exit is its own
/// outermost VM entry, and JavaScriptCore's watchdog restarts its budget at every entry, so an
/// endless chain of short jobs (`for (;;) await null`, `function f() { Promise.resolve().then(f) }`)
/// never reaches the time-limit callback, and the API lock is held through the whole drain, so no
/// other thread can change the limit either (docs/reliability.md). The in-process
/// watchdog stops every other runaway (loops, recursion, allocation) at its deadline; this watch
/// needs nothing from JavaScriptCore: it reads ``EngineOccupancy`` (atomics) every `tick`.
public final class StallWatch: Sendable {
    /// What the engine was doing when it stalled.
    public struct Stall: Sendable {
        /// The occupancy reading that crossed the line.
        public var occupancy: EngineOccupancy.Snapshot
        /// How long the engine had been in that entry, in milliseconds.
        public var stuckMilliseconds: Int
        /// Whether the stuck call had been cancelled (the cancel's grace ran out, not the budget's).
        public var cancelled: Bool
        /// Set when the process's resident size passed the memory ceiling while the engine was
        /// inside JavaScript the watchdog cannot reach (allocation in an endless promise chain).
        public var residentBytes: Int? = nil

        /// A stall (the watch makes them; tests of the verdict too).
        public init(occupancy: EngineOccupancy.Snapshot, stuckMilliseconds: Int, cancelled: Bool, residentBytes: Int? = nil) {
            self.occupancy = occupancy
            self.stuckMilliseconds = stuckMilliseconds
            self.cancelled = cancelled
            self.residentBytes = residentBytes
        }
    }

    private let occupancy: EngineOccupancy
    private let graceNanoseconds: UInt64
    private let tick: Duration
    private let onStall: @Sendable (Stall) -> Void
    private let onTick: (@Sendable (_ healthy: Bool) -> Void)?
    private let stopped = Atomic<Bool>(false)
    /// Set by ``hurry()``: the entry running now is a stall, whatever its budget.
    private let hurried = Atomic<Bool>(false)
    private let memoryCeiling: Int?
    private let onMemoryNotBlamed: (@Sendable (_ residentBytes: Int) -> Void)?

    /// Starts watching. `onStall` runs once, on the watch's thread; `onTick` after every reading
    /// (healthy: the engine is idle or within its budget plus grace), e.g. for systemd heartbeats.
    public init(
        occupancy: EngineOccupancy, grace: Duration, tick: Duration = .milliseconds(20),
        memoryCeiling: Int? = nil,
        onTick: (@Sendable (_ healthy: Bool) -> Void)? = nil,
        onMemoryNotBlamed: (@Sendable (_ residentBytes: Int) -> Void)? = nil,
        onStall: @escaping @Sendable (Stall) -> Void
    ) {
        self.onMemoryNotBlamed = onMemoryNotBlamed
        self.occupancy = occupancy
        self.graceNanoseconds = UInt64(max(0, grace.nanoseconds))
        self.memoryCeiling = memoryCeiling
        self.tick = tick
        self.onTick = onTick
        self.onStall = onStall
        let thread = Thread { [self] in self.loop() }
        thread.name = "macroengine-stallwatch"
        thread.start()
    }

    /// Stops the thread at its next tick.
    public func stop() { stopped.store(true, ordering: .relaxed) }

    /// Makes the entry running now (if any) a stall at the next tick, without waiting for its
    /// budget and the grace: macrod's shutdown calls this once its own grace period has passed
    /// with the engine still inside JavaScript, so that it does not wait for the budget.
    public func hurry() { hurried.store(true, ordering: .relaxed) }

    /// The stall verdict for one reading at `now` (nil: no stall). Exposed for tests.
    public static func verdict(_ reading: EngineOccupancy.Snapshot, now: UInt64, graceNanoseconds: UInt64) -> Stall? {
        guard let since = reading.since else { return nil }
        var line = since &+ reading.budgetNanoseconds &+ graceNanoseconds
        if let cancelled = reading.cancelledAt { line = min(line, cancelled &+ graceNanoseconds) }
        guard now > line else { return nil }
        let byCancel = reading.cancelledAt.map { $0 &+ graceNanoseconds <= since &+ reading.budgetNanoseconds &+ graceNanoseconds } ?? false
        return Stall(occupancy: reading, stuckMilliseconds: Int((now - since) / 1_000_000), cancelled: byCancel)
    }

    /// Whether memory growth is the current entry's: the process is past `ceiling`, and it grew
    /// by at least a third of the ceiling since just before the entry began (`baseline`).
    /// Memory that is not JavaScript's (connections' buffers, a flood of requests) grows while
    /// the engine is idle or busy with another entry, and is never blamed on an innocent call.
    public static func blamesEntry(resident: Int, baseline: Int, ceiling: Int) -> Bool {
        resident > ceiling && resident - baseline > ceiling / 3
    }

    /// Whether the entry grew the process enough for the watchdog to stop it (in-process, the
    /// call fails with the memory limit's error): past 1.25 x memory_limit_mb (5/6 of the
    /// ceiling), a quarter of the limit of it since just before the entry began.
    public static func asksWatchdog(resident: Int, baseline: Int, ceiling: Int) -> Bool {
        resident > ceiling / 6 * 5 && resident - baseline > ceiling / 6
    }

    /// How recently (in the engine thread's CPU time) the watchdog must have ticked for the
    /// ceiling to leave the entry to it: 50 of its 10 ms ticks (JavaScriptCore's own
    /// collections run on the engine thread between ticks). JavaScript it never reaches
    /// (promise jobs) shows no tick at all.
    static let watchdogWindow: UInt64 = 500_000_000

    private func loop() {
        // The resident size at the previous tick, and the entry it belongs to.
        var previousResident = 0
        var entry: UInt64 = 0
        var baseline = 0
        var lastUnblamed: UInt64 = 0
        // While no JavaScript runs there is nothing to watch closely: a slower tick keeps an idle
        // macrod from waking 50 times a second (the first reading of an entry comes at most
        // this much after it began; every later one at `tick`).
        let idleTick = max(tick, .milliseconds(50))
        var busy = false
        while !stopped.load(ordering: .relaxed) {
            Thread.sleep(forTimeInterval: Double((busy ? tick : idleTick).nanoseconds) / 1e9)
            let reading = occupancy.snapshot
            busy = reading.since != nil
            var stall = Self.verdict(reading, now: EngineOccupancy.now(), graceNanoseconds: graceNanoseconds)
            if stall == nil, hurried.load(ordering: .relaxed), let since = reading.since {
                stall = Stall(occupancy: reading, stuckMilliseconds: Int((EngineOccupancy.now() &- since) / 1_000_000), cancelled: false)
            }
            // Memory the watchdog never got to judge: the engine is inside JavaScript that has
            // grown the process far past the cap (1.5 x memory_limit_mb), so do not wait for the grace.
            if let ceiling = memoryCeiling {
                let resident = Watchdog.residentBytes()
                defer { previousResident = resident }
                if let since = reading.since {
                    if since != entry { (entry, baseline) = (since, previousResident == 0 ? resident : previousResident) }
                    let blamed = Self.blamesEntry(resident: resident, baseline: baseline, ceiling: ceiling)
                    // Grown past 1.25 x memory_limit_mb by this entry (many small objects cost the
                    // process 1.5x to 3x what the heap counts live): the watchdog stops the call
                    // in-process at its next tick, long before the ceiling restarts the engine.
                    if Self.asksWatchdog(resident: resident, baseline: baseline, ceiling: ceiling) {
                        occupancy.requestMemoryStop(resident: resident)
                    }
                    // While the watchdog still reaches the entry, its stop comes first; the
                    // ceiling is for JavaScript it never reaches (promise jobs).
                    let watchdogActs = reading.watchdogReaches(engineCPU: occupancy.engineCPUNanoseconds, window: Self.watchdogWindow)
                    if stall == nil, blamed, !watchdogActs {
                        stall = Stall(occupancy: reading, stuckMilliseconds: Int((EngineOccupancy.now() - since) / 1_000_000), cancelled: false, residentBytes: resident)
                    } else if resident > ceiling, !blamed, EngineOccupancy.now() &- lastUnblamed > 60_000_000_000 {
                        lastUnblamed = EngineOccupancy.now()
                        onMemoryNotBlamed?(resident)
                    }
                }
            }
            onTick?(stall == nil)
            if let stall {
                stopped.store(true, ordering: .relaxed)
                onStall(stall)
                return
            }
        }
    }
}

extension Duration {
    /// Whole nanoseconds, rounded toward zero (saturating at Int64's range). One 128-bit
    /// division: `components` divides, then multiplies back, on each read.
    var nanoseconds: Int64 { Int64(clamping: attoseconds / 1_000_000_000) }
}
