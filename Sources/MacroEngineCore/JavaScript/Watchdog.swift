import CJavaScriptCore
#if canImport(Glibc)
import Glibc
#endif
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
        // The process's resident size (a cheap read) includes the JS heap; only when it has passed
        // the limit is the heap itself measured (JSGetMemoryUsageStatistics walks the heap, far
        // too slow to run every tick).
        if let memoryLimit, let ctx, Self.residentBytes() > memoryLimit {
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
    func insert(_ id: Int) { _ = ids.locked { $0.insert(id) } }
    func remove(_ id: Int) { _ = ids.locked { $0.remove(id) } }
    func contains(_ id: Int) -> Bool { ids.locked { $0.contains(id) } }
}

private func watchdogShouldTerminate(_ ctx: JSContextRef?, _ data: UnsafeMutableRawPointer?) -> Bool {
    guard let data else { return true }
    return Unmanaged<Watchdog>.fromOpaque(data).takeUnretainedValue().check(ctx)
}
