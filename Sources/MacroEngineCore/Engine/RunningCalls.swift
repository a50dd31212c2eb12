import NIOCore
import Synchronization

/// A call in flight, as `macro.running` shows it.
public struct RunningCall: Sendable, Equatable {
    /// The engine-assigned call id (for ``MacroEngine/cancel(call:)``).
    public var id: Int
    /// The macro (or function) called.
    public var macro: String
    /// Milliseconds since the call started.
    public var elapsedMilliseconds: Int
}

/// The registry behind ``MacroEngine/runningCalls`` and ``MacroEngine/cancel(call:)``: readable
/// from any thread, so a runaway macro on the engine's thread does not stop either.
final class RunningRegistry: Sendable {
    let calls = Mutex<[Int: (macro: String, started: NIODeadline)]>([:])
    let counter = Atomic<Int>(0)
    /// Callbacks waiting for a call to end (macro.cancel answers once the call has stopped).
    let waiters = Mutex<[Int: [@Sendable () -> Void]]>([:])
}

extension MacroEngine {
    func nextCallID() -> Int { running.counter.add(1, ordering: .relaxed).newValue }

    /// A fresh call id, for a caller that wants to know it before the call starts (any thread).
    public func reserveCallID() -> Int { nextCallID() }

    /// Runs `body` once call `id` has ended (at once when it is not running). Any thread.
    public func whenCallEnds(_ id: Int, _ body: @escaping @Sendable () -> Void) {
        let now = running.calls.locked { calls -> Bool in
            guard calls[id] != nil else { return true }
            running.waiters.locked { $0[id, default: []].append(body) }
            return false
        }
        if now { body() }
    }

    /// True when call `id` has been asked to stop (``cancel(call:)``).
    public func isCancelRequested(_ id: Int) -> Bool { runtimeCancellations.contains(id) }

    func registerRunning(_ context: CallContext) {
        let macro = context.macro ?? "<anonymous>"
        running.calls.locked { $0[context.id] = (macro, context.started) }
    }

    func unregisterRunning(_ id: Int) {
        let waiters = running.calls.locked { calls -> [@Sendable () -> Void] in
            calls.removeValue(forKey: id)
            // Nobody waits for most calls: no hash of the id then.
            return running.waiters.locked { $0.isEmpty ? nil : $0.removeValue(forKey: id) } ?? []
        }
        waiters.forEach { $0() }
    }

    /// The calls in flight (started from Swift and not settled), oldest first. Thread-safe; answers
    /// even while a macro keeps the engine's thread busy.
    public var runningCalls: [RunningCall] {
        let now = NIODeadline.now()
        return running.calls.locked { calls in
            calls.map { RunningCall(id: $0.key, macro: $0.value.macro, elapsedMilliseconds: Int((now - $0.value.started).nanoseconds / 1_000_000)) }
        }.sorted { $0.id < $1.id }
    }

    /// Cancels a call in flight: a runaway synchronous macro is stopped at the next watchdog tick
    /// (10 ms of running JavaScript), an awaiting one at once; its turn is rolled back and its timers cancelled, and the
    /// caller gets a `.cancelled` error. Returns false when no such call is running.
    @discardableResult
    public func cancel(call id: Int) -> Bool {
        guard running.calls.locked({ $0[id] != nil }) else { return false }
        onLoopEventually { runtime in
            // Seen by the watchdog if the call's JavaScript is running now...
            runtime.watchdog.cancellations.insert(id)
            // ...and if it is awaiting, it ends here.
            if let context = runtime.pendingCalls.values.first(where: { $0.id == id }), runtime.watchdog.runningCall != id {
                self.finish(context, .failure(MacroError(code: .cancelled, message: "cancelled", macro: context.macro)), runtime: runtime)
            }
        }
        // The loop may be busy with that very call: tell the watchdog now, from this thread, and
        // start the stall watch's grace in case JavaScriptCore cannot stop it (a promise-job chain).
        runtimeCancellations.insert(id)
        occupancy.noteCancel(of: id)
        return true
    }
}
