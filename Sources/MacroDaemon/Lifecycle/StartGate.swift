import Synchronization

/// A one-shot latch between two of macrod's services: the one before opens it once it has
/// started (or fails it when it could not), and the one after waits for it before it starts.
final class StartGate: Sendable {
    private enum State {
        case waiting([Int: CheckedContinuation<Bool, Never>])
        case resolved(Bool)
    }

    private let state = Mutex<State>(.waiting([:]))
    private let nextWaiter = Atomic<Int>(0)

    /// A gate nobody has opened yet.
    init() {}

    /// The service before has started: every waiter goes on.
    func open() { resolve(true) }

    /// The service before did not start: nothing after it starts either.
    func fail() { resolve(false) }

    /// Whether it was opened (false while it is still closed, and once it failed).
    var isOpen: Bool {
        state.withLock {
            if case .resolved(true) = $0 { return true }
            return false
        }
    }

    /// Waits until the gate is opened (true) or failed (false); false at once when the task is
    /// cancelled.
    func wait() async -> Bool {
        let id = nextWaiter.add(1, ordering: .relaxed).oldValue
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let now: Bool? = state.withLock { state in
                    switch state {
                    case .resolved(let opened):
                        return opened
                    case .waiting(var waiters):
                        if Task.isCancelled { return false }
                        waiters[id] = continuation
                        state = .waiting(waiters)
                        return nil
                    }
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            let waiter: CheckedContinuation<Bool, Never>? = state.withLock { state in
                guard case .waiting(var waiters) = state, let waiter = waiters.removeValue(forKey: id) else { return nil }
                state = .waiting(waiters)
                return waiter
            }
            waiter?.resume(returning: false)
        }
    }

    private func resolve(_ opened: Bool) {
        let waiters: [CheckedContinuation<Bool, Never>] = state.withLock { state in
            guard case .waiting(let waiters) = state else { return [] }
            state = .resolved(opened)
            return Array(waiters.values)
        }
        for waiter in waiters { waiter.resume(returning: opened) }
    }
}
