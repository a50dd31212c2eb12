import CJavaScriptCore
import CSystemShims
import NIOCore
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Arms JavaScriptCore's execution time limit for one top-level entry into the VM, in short
/// ticks: at each tick the callback checks the entry's deadline and whether the running call was
/// cancelled (from any thread), re-arming itself otherwise. A terminated script becomes a
/// `.timeout` or `.cancelled` error.
final class Watchdog {
    /// Why the watchdog stopped the script.
    enum Reason: Equatable {
        case timeout, cancelled
        /// The heap's live bytes passed the limit.
        case memory(Int)
        /// The process's resident bytes passed 1.25 x the limit, grown by this entry (the stall
        /// watch asked for the stop: ``EngineOccupancy/requestMemoryStop(resident:)``).
        case processMemory(Int)
    }

    private let group: JSContextGroupRef
    private(set) var fired: Reason? {
        didSet { if fired == nil { firedBacktrace = nil; firedStack = nil } }
    }
    /// Where the script was when the watchdog stopped it (JSC's termination carries no position).
    private(set) var firedBacktrace: [BacktraceFrame]?
    /// The same, with columns: the stack that ``stackProbe`` read at the stop (`name@file:line:column`
    /// lines, innermost first, the probe's own frame already removed). Nil when the probe failed.
    private(set) var firedStack: [StackFrame]?
    /// `__macroengine_where()`, which returns `new Error().stack` (``JSRuntime/stackProbeSource``;
    /// made by the runtime, kept protected): called from the watchdog's callback at a stop, it sees
    /// the stopped frames below it, each with the column that `JSContextCreateBacktrace` leaves out.
    var stackProbe: JSObjectRef?
    private var deadline: NIODeadline = .distantFuture
    /// The time limit of the outermost entry armed last (what a timeout reports).
    var armedLimit: Duration { .nanoseconds(armedNanoseconds) }
    private var armedNanoseconds: Int64 = 0
    /// Call ids whose cancellation was requested; checked at every tick.
    let cancellations = CancellationRequests()
    /// The call whose JavaScript is running now (0: none).
    var runningCall = 0
    /// Stop a script once the heap (plus memory its objects hold outside it) passes this.
    var memoryLimit: Int?
    /// The resident size past which the next tick measures live memory (see ``overMemoryLimit``).
    private var memoryGate = 0
    static let tick = 0.01

    /// Where the stall watch sees that the watchdog still reaches the running JavaScript.
    private let occupancy: EngineOccupancy?

    init(group: JSContextGroupRef, occupancy: EngineOccupancy? = nil) {
        self.group = group
        self.occupancy = occupancy
    }

    /// Sets the limit for the next entry (measured from VM entry, native callbacks included);
    /// `now`: the clock as the caller just read it.
    func arm(_ limit: Duration, now: NIODeadline = .now()) {
        arm(nanoseconds: limit.nanoseconds, now: now)
    }

    /// ``arm(_:now:)`` with the limit in nanoseconds (a call's turn has it so).
    func arm(nanoseconds limit: Int64, now: NIODeadline) {
        if fired != nil { fired = nil }
        armedNanoseconds = limit
        deadline = now + .nanoseconds(limit)
        rearm(min(Double(limit) / 1e9, Self.tick), unlessUnchanged: true)
    }

    /// Moves the running entry's deadline later by `duration`: a debug session's time stopped at
    /// a breakpoint (the thread blocked in a native hook) is not running time.
    func postpone(by duration: Duration) {
        guard deadline != .distantFuture else { return }
        deadline = deadline + .nanoseconds(duration.nanoseconds)
    }

    /// Runs `body` (a nested call into JavaScript, from a native of the running entry) under a
    /// deadline of its own, `limit` from now: a debug session's request while it is stopped. When
    /// `body` ends in time, the entry's deadline is put back. A stop cannot be undone within the
    /// entry (JavaScriptCore keeps its termination request until the entry ends): past `limit`,
    /// the entry ends too. Returns what `body` returned, and whether it timed out.
    func bounded<T>(_ limit: Duration, _ body: () -> T) -> (T, timedOut: Bool) {
        let saved = deadline
        let before = fired
        deadline = .now() + .nanoseconds(limit.nanoseconds)
        rearm(min(Double(limit.nanoseconds) / 1e9, Self.tick))
        let result = body()
        if before == nil, fired == .timeout { return (result, true) }
        deadline = saved
        if fired == nil, deadline != .distantFuture {
            rearm(min(Self.tick, max(0, Double((deadline - .now()).nanoseconds) / 1e9)))
        }
        return (result, false)
    }

    /// The shortest limit ever armed: JavaScriptCore 2.50.6 aborts in its trap-signal thread when
    /// a limit of microseconds is re-armed from the callback (measured: docs/reliability.md), so
    /// the last tick before a deadline may overshoot it by up to this much.
    static let shortest = 0.005

    /// The limit last given to JavaScriptCore (nil: none yet).
    private var lastLimit: Double?

    /// Gives JavaScriptCore the limit of the next tick. `unlessUnchanged`: not when it has that
    /// limit already (arming an entry, outside the VM: JavaScriptCore keeps the limit and starts
    /// its timer with it at each VM entry, so setting the same one again does nothing but take
    /// the VM's lock; every entry's limit is the same tick unless a deadline is near). The
    /// callback's re-arms, inside the VM, always set it (they start the next tick).
    private func rearm(_ seconds: Double, unlessUnchanged: Bool = false) {
        let seconds = max(Self.shortest, seconds)
        if unlessUnchanged, lastLimit == seconds { return }
        lastLimit = seconds
        JSContextGroupSetExecutionTimeLimit(group, seconds, watchdogShouldTerminate, Unmanaged.passUnretained(self).toOpaque())
    }

    fileprivate func check(_ ctx: JSContextRef?) -> Bool {
        // Stopped already, and JavaScript runs again in the same entry: the engine reading a
        // stopped job's error (a looping `message` getter) or a `finally` of the macro's.
        // JavaScriptCore does not re-arm a limit whose callback said stop, so keep ticking and
        // keep stopping: nothing after a stop runs longer than a tick.
        if fired != nil { return stop(nil) }
        occupancy?.watchdogTick()
        // The stall watch, which measures the process, found this entry grew it too far.
        if let resident = occupancy?.requestedMemoryStop, let ctx {
            // Garbage is not a bomb: collect, give freed memory back, and stop only if the process
            // is still past 1.25 x the limit (`for (;;) new Date().toLocaleString()` grows it by
            // ICU's garbage, which a collection frees).
            if processStillOverLimit(ctx) {
                fired = .processMemory(resident)
                return stop(ctx)
            }
            occupancy?.clearMemoryStop()
        }
        if let memoryLimit, let ctx, overMemoryLimit(ctx, limit: memoryLimit) { return stop(ctx) }
        if runningCall != 0, cancellations.contains(runningCall) {
            fired = .cancelled
            return stop(ctx)
        }
        let now = NIODeadline.now()
        if now >= deadline {
            fired = .timeout
            return stop(ctx)
        }
        // Not yet: another tick (the callback must re-arm to let the script go on).
        rearm(min(Self.tick, Double((deadline - now).nanoseconds) / 1e9))
        return false
    }

    /// Records where the script is (we are on the engine thread, at the watchdog's safe point),
    /// then tells JavaScriptCore to terminate it, and keeps a short tick armed so that any
    /// JavaScript the same entry runs afterwards is stopped too.
    private func stop(_ ctx: JSContextRef?) -> Bool {
        // First, while the callback holds the VM with the script's frames below: JavaScriptCore
        // set the deadline to "never" before calling us, so the probe's own entry is not trapped.
        if let ctx, let probe = stackProbe {
            var exception: JSValueRef?
            if let value = JSObjectCallAsFunction(ctx, probe, nil, 0, nil, &exception), exception == nil,
                JSValueIsString(ctx, value), let text = JSValueToStringCopy(ctx, value, nil)
            {
                firedStack = StackFrame.parse(probeStack: String(jsString: text))
                JSStringRelease(text)
            }
        }
        if let ctx, let text = JSContextCreateBacktrace(ctx, 32) {
            firedBacktrace = BacktraceFrame.parse(String(jsString: text))
            JSStringRelease(text)
        }
        rearm(Self.shortest)
        return true
    }

    /// The memory verdict judges *live* memory: the resident size is only a cheap gate (JSC keeps
    /// freed pages and capacity long after a collection, so neither says what is alive). Past the
    /// gate, a full synchronous collection runs here, on the engine thread at the watchdog's safe
    /// point, and the heap's size plus the memory its objects hold outside it (typed arrays,
    /// array buffers, long strings: extraMemorySize) is what is compared with the limit. The gate
    /// then moves to the resident size plus a margin, so a macro that keeps a large live state
    /// does not pay for a collection every tick, and what an earlier stop left resident does not
    /// stop the next macro.
    private func overMemoryLimit(_ ctx: JSContextRef, limit: Int) -> Bool {
        let resident = Self.residentBytes()
        guard resident > max(limit, memoryGate) else { return false }
        occupancy?.watchdogTick(judging: true)
        defer { occupancy?.watchdogTick() }
        JSSynchronousGarbageCollectForDebugging(ctx)
        let live = Self.liveBytes(ctx)
        memoryGate = Self.residentBytes() + Self.gateMargin(limit)
        guard live > limit else { return false }
        fired = .memory(live)
        return true
    }

    /// The stall watch asked for a memory stop: after a full collection and a `malloc_trim`, is
    /// the process still past 1.25 x the limit? (On the engine thread, at the watchdog's safe point.)
    private func processStillOverLimit(_ ctx: JSContextRef) -> Bool {
        guard let limit = memoryLimit else { return true }
        occupancy?.watchdogTick(judging: true)
        defer { occupancy?.watchdogTick() }
        JSSynchronousGarbageCollectForDebugging(ctx)
        _ = macroengine_malloc_trim()
        let resident = Self.residentBytes()
        memoryGate = resident + Self.gateMargin(limit)
        return resident > limit / 4 * 5
    }

    /// After a memory stop (outside JavaScript): collect what the stopped macro held and move the
    /// gate to what stays resident. Returns the live bytes afterwards.
    @discardableResult
    func collectAfterStop(_ ctx: JSContextRef) -> Int {
        JSSynchronousGarbageCollectForDebugging(ctx)
        memoryGate = Self.residentBytes() + Self.gateMargin(memoryLimit ?? 0)
        return Self.liveBytes(ctx)
    }

    /// Resident growth allowed past the last verdict before the next one: 1/16 of the limit, at
    /// least 16 MiB (a stopped bomb's peak stays within the limit plus about 2 margins).
    static func gateMargin(_ limit: Int) -> Int { max(16 << 20, limit / 16) }
}

extension Watchdog {
    private static let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))

    /// The process's resident set size, from /proc/self/statm (0 when unreadable).
    static func residentBytes() -> Int {
        let fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return 0 }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 128)
        let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard n > 0 else { return 0 }
        let fields = buffer[..<n].split(separator: UInt8(ascii: " "))
        guard fields.count > 1, let pages = Int(String(decoding: fields[1], as: UTF8.self)) else { return 0 }
        return pages * pageSize
    }

    /// heapSize from JSGetMemoryUsageStatistics: live bytes right after a full collection (it
    /// walks the heap, so it is read only after one). JSC's heapSize already includes the extra
    /// memory (typed arrays, array buffers, long strings; measured: a typed-array bomb showed
    /// heapSize 494 MiB = extraMemorySize 494 MiB at 518 MiB resident), so it is not added again.
    static func liveBytes(_ ctx: JSContextRef) -> Int {
        guard let stats = JSGetMemoryUsageStatistics(ctx) else { return 0 }
        func read(_ name: String) -> Double {
            withJSString(name) { key in
                JSObjectGetProperty(ctx, stats, key, nil).map { JSValueToNumber(ctx, $0, nil) } ?? 0
            }
        }
        let total = read("heapSize")
        return total.isFinite ? Int(total) : 0
    }
}

/// One frame of `JSContextCreateBacktrace`'s text: `#0 spin() at /m/spin.js:3`.
struct BacktraceFrame: Equatable {
    var function: String
    var file: String?
    var line: Int?

    /// Parses the text, innermost frame first; lines that are not frames are skipped.
    static func parse(_ text: String) -> [BacktraceFrame] {
        text.split(separator: "\n").compactMap { raw in
            guard raw.hasPrefix("#"), let space = raw.firstIndex(of: " ") else { return nil }
            var rest = raw[raw.index(after: space)...]
            var frame = BacktraceFrame(function: String(rest))
            if let at = rest.range(of: "() at ", options: .backwards) {
                frame.function = String(rest[..<at.lowerBound])
                rest = rest[at.upperBound...]
                if let colon = rest.lastIndex(of: ":"), let line = Int(rest[rest.index(after: colon)...]) {
                    frame.file = String(rest[..<colon])
                    frame.line = line
                } else {
                    frame.file = String(rest)
                }
            }
            return frame
        }
    }

    /// JSC's own stack-line form, `function@file:line`.
    var stackLine: String {
        let name = function == "global code" ? "global code" : function
        guard let file else { return name }
        return "\(name)@\(file)" + (line.map { ":\($0)" } ?? "")
    }
}

/// Thread-safe set of call ids to cancel.
final class CancellationRequests: Sendable {
    private let ids = Mutex<Set<Int>>([])
    /// How many ids the set holds (written under the lock): every call's end removes its id,
    /// and almost always there is none to remove, so that needs neither the lock nor a hash.
    /// An insert racing the removal of the same id may stay in the set, as it could before
    /// (the insert landing just after the removal): ids are never reused.
    private let count = Atomic<Int>(0)
    func insert(_ id: Int) {
        ids.locked {
            $0.insert(id)
            count.store($0.count, ordering: .releasing)
        }
    }
    func remove(_ id: Int) {
        guard count.load(ordering: .acquiring) != 0 else { return }
        ids.locked {
            $0.remove(id)
            count.store($0.count, ordering: .releasing)
        }
    }
    func contains(_ id: Int) -> Bool { ids.locked { $0.contains(id) } }
}

private func watchdogShouldTerminate(_ ctx: JSContextRef?, _ data: UnsafeMutableRawPointer?) -> Bool {
    guard let data else { return true }
    return Unmanaged<Watchdog>.fromOpaque(data).takeUnretainedValue().check(ctx)
}
