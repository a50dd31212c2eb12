import CJavaScriptCore
import NIOCore
import Synchronization

/// Arms JavaScriptCore's execution time limit for one top-level entry into the VM, in short
/// ticks: at each tick the callback checks the entry's deadline and whether the running call was
/// cancelled (from any thread), re-arming itself otherwise. A terminated script becomes a
/// `.timeout` or `.cancelled` error.
final class Watchdog {
    /// Why the watchdog stopped the script.
    enum Reason: Equatable { case timeout, cancelled, memory(Int) }

    private let group: JSContextGroupRef
    private(set) var fired: Reason?
    private var deadline: NIODeadline = .distantFuture
    /// Call ids whose cancellation was requested; checked at every tick.
    let cancellations = CancellationRequests()
    /// The call whose JavaScript is running now (0: none).
    var runningCall = 0
    /// Stop a script once the heap (plus memory its objects hold outside it) passes this.
    var memoryLimit: Int?
    static let tick = 0.01

    init(group: JSContextGroupRef) { self.group = group }

    /// Sets the limit for the next entry (measured from VM entry, native callbacks included).
    func arm(_ limit: Duration) {
        fired = nil
        deadline = .now() + .nanoseconds(limit.components.seconds * 1_000_000_000 + limit.components.attoseconds / 1_000_000_000)
        let seconds = max(0.001, Double(limit.components.seconds) + Double(limit.components.attoseconds) / 1e18)
        rearm(min(seconds, Self.tick))
    }

    private func rearm(_ seconds: Double) {
        JSContextGroupSetExecutionTimeLimit(group, seconds, watchdogShouldTerminate, Unmanaged.passUnretained(self).toOpaque())
    }

    fileprivate func check(_ ctx: JSContextRef?) -> Bool {
        if let memoryLimit, let ctx {
            let used = Self.heapBytes(ctx)
            if used > memoryLimit {
                fired = .memory(used)
                return true
            }
        }
        if runningCall != 0, cancellations.contains(runningCall) {
            fired = .cancelled
            return true
        }
        let now = NIODeadline.now()
        if now >= deadline {
            fired = .timeout
            return true
        }
        // Not yet: another tick (the callback must re-arm to let the script go on).
        rearm(min(Self.tick, Double((deadline - now).nanoseconds) / 1e9))
        return false
    }
}

extension Watchdog {
    /// max(heapSize, heapCapacity) + extraMemorySize from JSGetMemoryUsageStatistics.
    static func heapBytes(_ ctx: JSContextRef) -> Int {
        guard let stats = JSGetMemoryUsageStatistics(ctx) else { return 0 }
        func read(_ name: String) -> Double {
            withJSString(name) { key in
                JSObjectGetProperty(ctx, stats, key, nil).map { JSValueToNumber(ctx, $0, nil) } ?? 0
            }
        }
        // heapSize is only brought up to date by a collection; heapCapacity follows allocation.
        let total = max(read("heapSize"), read("heapCapacity")) + read("extraMemorySize")
        return total.isFinite ? Int(total) : 0
    }
}

/// Thread-safe set of call ids to cancel.
final class CancellationRequests: Sendable {
    private let ids = Mutex<Set<Int>>([])
    func insert(_ id: Int) { _ = ids.withLock { $0.insert(id) } }
    func remove(_ id: Int) { _ = ids.withLock { $0.remove(id) } }
    func contains(_ id: Int) -> Bool { ids.withLock { $0.contains(id) } }
}

private func watchdogShouldTerminate(_ ctx: JSContextRef?, _ data: UnsafeMutableRawPointer?) -> Bool {
    guard let data else { return true }
    return Unmanaged<Watchdog>.fromOpaque(data).takeUnretainedValue().check(ctx)
}
