import NIOCore
import Synchronization

/// `fsync: interval`: makes the latest state durable at most once per period, on the engine's
/// loop. Stopped before the event loops shut down: a cancel after that schedules on a dead loop.
final class FsyncTimerService: DaemonService {
    private let loop: any EventLoop
    private let period: TimeAmount?
    private let sync: @Sendable () -> Void
    private let task = Mutex<RepeatedTask?>(nil)

    /// Runs `sync` on `loop` every `period` (nil: never; another fsync policy).
    init(loop: any EventLoop, period: Duration?, sync: @escaping @Sendable () -> Void) {
        self.loop = loop
        self.period = period.map { .nanoseconds($0.components.seconds * 1_000_000_000 + $0.components.attoseconds / 1_000_000_000) }
        self.sync = sync
    }

    /// Schedules the timer (its first run one period from now).
    func start() {
        guard let period else { return }
        let sync = sync
        task.withLock { $0 = loop.scheduleRepeatedTask(initialDelay: period, delay: period) { _ in sync() } }
    }

    /// Cancels the timer and waits until its loop has taken the cancel (a run under way ends first).
    func stop() async {
        guard
            let task = task.withLock({ task in
                defer { task = nil }; return task
            })
        else { return }
        let cancelled = loop.makePromise(of: Void.self)
        task.cancel(promise: cancelled)
        try? await cancelled.futureResult.get()
    }
}
