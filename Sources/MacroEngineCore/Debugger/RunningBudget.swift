import NIOCore
import Synchronization

/// A session's call deadline, counted over the time it runs: what it spent stopped at
/// breakpoints is subtracted. Read by the hooks (every statement) and by a task on the session's
/// loop; written by the hook that stops.
final class RunningBudget: Sendable {
    private let budget: Int64
    private let started = Atomic<Int64>(0)
    private let stopped = Atomic<Int64>(0)
    /// Set once the budget is spent (the session then ends with a timeout).
    let exceeded = Atomic<Bool>(false)

    /// A budget of `limit` running time.
    init(_ limit: Duration) {
        budget = limit.components.seconds * 1_000_000_000 + limit.components.attoseconds / 1_000_000_000
    }

    /// The macro starts running now.
    func start() { started.store(NIODeadline.now().uptimeNanoseconds.int64, ordering: .relaxed) }

    /// Adds time spent stopped.
    func addStopped(_ nanoseconds: Int64) { stopped.add(nanoseconds, ordering: .relaxed) }

    /// True (and remembered) once the running time passes the budget.
    func isExceeded() -> Bool {
        if exceeded.load(ordering: .relaxed) { return true }
        let start = started.load(ordering: .relaxed)
        guard start > 0 else { return false }
        let running = NIODeadline.now().uptimeNanoseconds.int64 - start - stopped.load(ordering: .relaxed)
        guard running > budget else { return false }
        exceeded.store(true, ordering: .relaxed)
        return true
    }
}

private extension UInt64 {
    var int64: Int64 { Int64(clamping: self) }
}
