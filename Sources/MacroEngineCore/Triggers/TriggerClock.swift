import Foundation
import NIOCore
import Synchronization

/// The time triggers run by: the wall clock (for cron) and timers. The daemon's is the engine
/// loop's (``LoopTriggerClock``); tests drive a ``ManualTriggerClock``.
public protocol TriggerClock: Sendable {
    /// Now, on the wall clock.
    var now: Date { get }
    /// Calls `body` once `delay` has passed; the returned timer cancels it.
    func schedule(after delay: Duration, _ body: @escaping @Sendable () -> Void) -> any TriggerTimer
}

/// A scheduled call of a ``TriggerClock``.
public protocol TriggerTimer: Sendable {
    /// Stops it from being called (nothing happens when it already was).
    func cancel()
}

/// Timers on an event loop (the engine's): a trigger's run starts on the loop its calls run on.
public struct LoopTriggerClock: TriggerClock {
    let loop: any EventLoop

    /// A clock whose timers run on `loop`.
    public init(loop: any EventLoop) { self.loop = loop }

    /// The system's wall clock.
    public var now: Date { Date() }

    /// A task on the loop, `delay` from now.
    public func schedule(after delay: Duration, _ body: @escaping @Sendable () -> Void) -> any TriggerTimer {
        let task = loop.scheduleTask(in: .nanoseconds(max(0, delay.nanoseconds))) { body() }
        return LoopTimer(task: task)
    }

    struct LoopTimer: TriggerTimer {
        let task: Scheduled<Void>
        func cancel() { task.cancel() }
    }
}

/// A clock that moves only when told (``advance(by:)``), firing what falls due in order on the
/// calling thread. For tests: schedules are tested without waiting for them.
public final class ManualTriggerClock: TriggerClock {
    private struct Pending {
        let id: Int
        let due: Date
        let body: @Sendable () -> Void
    }

    private let state: Mutex<(now: Date, pending: [Pending], next: Int)>

    /// A clock showing `start`.
    public init(start: Date) { state = Mutex((start, [], 0)) }

    /// What the clock shows.
    public var now: Date { state.withLock { $0.now } }

    /// How many timers are waiting.
    public var pendingCount: Int { state.withLock { $0.pending.count } }

    /// Waits until ``advance(by:)`` moves the clock past `delay` from now.
    public func schedule(after delay: Duration, _ body: @escaping @Sendable () -> Void) -> any TriggerTimer {
        let id = state.withLock { state -> Int in
            state.next += 1
            state.pending.append(Pending(id: state.next, due: state.now.addingTimeInterval(delay.seconds), body: body))
            return state.next
        }
        return ManualTimer(clock: self, id: id)
    }

    func cancel(_ id: Int) { state.withLock { $0.pending.removeAll { $0.id == id } } }

    /// Moves the clock `interval` on, calling each timer that falls due (in due order, each
    /// with the clock at its due time; timers they schedule that fall due too are called).
    public func advance(by interval: Duration) {
        let end = now.addingTimeInterval(interval.seconds)
        while true {
            let due = state.withLock { state -> Pending? in
                guard
                    let index = state.pending.indices.min(by: {
                        state.pending[$0].due < state.pending[$1].due || (state.pending[$0].due == state.pending[$1].due && state.pending[$0].id < state.pending[$1].id)
                    }),
                    state.pending[index].due <= end
                else { return nil }
                let pending = state.pending.remove(at: index)
                state.now = max(state.now, pending.due)
                return pending
            }
            guard let due else { break }
            due.body()
        }
        state.withLock { $0.now = end }
    }

    struct ManualTimer: TriggerTimer {
        let clock: ManualTriggerClock
        let id: Int
        func cancel() { clock.cancel(id) }
    }
}

extension Duration {
    /// The duration in seconds, as a Double.
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
