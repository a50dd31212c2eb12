import NIOCore

/// What a run of JavaScript is for. It decides the run's time limit, whether it is a turn of
/// the participants (the progress model's changes commit when it succeeds, roll back when it
/// fails), and who hears about a failure. ``MacroEngine/enter(_:_:_:)`` takes one.
enum Entry {
    /// A turn of a macro call: its first run, a timer callback, a promise continuation. The
    /// watchdog gets the smaller of the engine's time limit and what is left of the call's
    /// deadline; the call is the runtime's current one; the turn observer runs after the
    /// outermost entry. nil: a timer of code run at load, which serves no call.
    case call(CallContext?)
    /// A script or function run synchronously (`evaluate`, `call`, a lib file, the REPL): a
    /// turn too, and the failure of the outermost entry goes to the exception handler.
    /// `timeLimit` nil: the engine's.
    case script(macro: String?, timeLimit: Duration?)
    /// The engine's own runs, armed but not a turn: a macro file's evaluation at load, the
    /// drain after a stop, the profiler's warm-up. `timeLimit` nil: the engine's.
    case housekeeping(macro: String?, timeLimit: Duration?)
}

extension MacroEngine {
    /// The one way into JavaScript: every run goes through here, then through the runtime's
    /// armed entry (``JSRuntime/armed(timeLimit:macro:_:)``: the watchdog, the stall watch's
    /// occupancy record, the mapping of a stop to its error), so nothing runs unarmed.
    func enter<T>(_ runtime: JSRuntime, _ entry: Entry, _ body: () throws -> T) throws -> T {
        if runtime.entryDepth == 0, let reason = paused.current {
            switch entry {
            case .call(let context): throw pausedError(reason, macro: context?.macro)
            case .script(let macro, _), .housekeeping(let macro, _): throw pausedError(reason, macro: macro)
            }
        }
        switch entry {
        case .call(let context):
            return try callTurn(runtime, context, body)
        case .script(let macro, let timeLimit):
            let outermost = runtime.entryDepth == 0
            // A macro called synchronously answers for its own code (a lib file's load has set its owner).
            let previousOwner = runtime.currentOwner
            if outermost, previousOwner == nil, let macro { runtime.currentOwner = runtime.macroOwners[macro] }
            defer { runtime.currentOwner = previousOwner }
            do {
                return try transaction(runtime) { try runtime.armed(timeLimit: timeLimit ?? self.timeLimit, macro: macro, body) }
            } catch var error as MacroError {
                if error.macro == nil { error.macro = macro }
                if outermost { exceptionHandler(error) }
                throw error
            }
        case .housekeeping(let macro, let timeLimit):
            return try runtime.armed(timeLimit: timeLimit ?? self.timeLimit, macro: macro, body)
        }
    }

    /// ``Entry/call(_:)``.
    private func callTurn<T>(_ runtime: JSRuntime, _ context: CallContext?, _ body: () throws -> T) throws -> T {
        // The settings in one read, and one clock read for the deadline, the watchdog and the
        // occupancy record.
        let settings = turnSettings
        var limit = settings.timeLimit
        let participants = settings.participants
        let now = NIODeadline.now()
        var deadlineBound = false
        if let context {
            let remaining = context.deadline - now
            guard remaining.nanoseconds > 0 else {
                throw MacroError(code: .timeout, message: "timed out after \(context.budget.milliseconds) ms", macro: context.macro)
            }
            let left = Duration.nanoseconds(remaining.nanoseconds)
            if left < limit { limit = left; deadlineBound = true }
        }
        let previous = runtime.currentCall
        runtime.currentCall = context
        let previousRunning = runtime.watchdog.runningCall
        runtime.watchdog.runningCall = context?.id ?? 0
        defer {
            runtime.currentCall = previous
            runtime.watchdog.runningCall = previousRunning
            if runtime.entryDepth == 0 { turnEnded() }
        }
        do {
            return try transaction(runtime, participants) { try runtime.armed(timeLimit: limit, macro: context?.macro, now: now, body) }
        } catch var error as MacroError where error.code == .timeout && deadlineBound {
            error.message = "timed out after \(context!.budget.milliseconds) ms"
            throw error
        }
    }

    /// Runs `body` as one atomic turn of the participants (only at the outermost entry);
    /// `participants`: ``turnParticipants`` when the caller read them already.
    private func transaction<T>(_ runtime: JSRuntime, _ participants: [any TurnParticipant]? = nil, _ body: () throws -> T) throws -> T {
        guard runtime.entryDepth == 0 else { return try body() }
        let participants = participants ?? turnParticipants
        participants.forEach { $0.beginTurn() }
        runtime.turnFailed = false
        runtime.inTransaction = true
        defer {
            runtime.inTransaction = false
            let waiting = runtime.afterTurn
            runtime.afterTurn.removeAll()
            waiting.forEach { $0() }
        }
        do {
            let result = try body()
            if runtime.turnFailed { participants.forEach { $0.rollbackTurn() } } else { participants.forEach { $0.commitTurn() } }
            return result
        } catch {
            participants.forEach { $0.rollbackTurn() }
            if let stop = error as? MacroError, [.timeout, .cancelled, .memoryLimit].contains(stop.code) {
                drainAfterStop(runtime, participants)
            }
            throw error
        }
    }

    /// A stop can land while JavaScriptCore drains promise jobs: the drain ends there, and the
    /// jobs still queued (the stopped macro's continuations, an endless `await` loop's next turn)
    /// would run at the next API exit, inside whatever innocent call comes next, and be blamed on
    /// it. So they run now, in an entry of their own that serves no call and whose changes are
    /// rolled back; an endless chain among them is then the stall watch's, attributed to nobody.
    private func drainAfterStop(_ runtime: JSRuntime, _ participants: [any TurnParticipant]) {
        participants.forEach { $0.beginTurn() }
        defer { participants.forEach { $0.rollbackTurn() } }
        let running = runtime.watchdog.runningCall
        runtime.watchdog.runningCall = 0
        defer { runtime.watchdog.runningCall = running }
        // A pass that is itself stopped may leave the jobs of another chain behind: one more pass.
        for _ in 0..<2 {
            do {
                _ = try enter(runtime, .housekeeping(macro: nil, timeLimit: nil)) { try runtime.evaluateRaw("void 0", file: nil) }
                return
            } catch {
                continue
            }
        }
    }
}
