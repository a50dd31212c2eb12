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
    /// The one way into JavaScript: every run goes through here (or, for a call's first run,
    /// through the same ``beginCallTurn(_:_:)`` and ``endCallTurn(_:_:_:)`` that `.call` uses),
    /// then through the runtime's armed entry (``JSRuntime/arm(timeLimit:now:)``: the watchdog,
    /// the stall watch's occupancy record, the mapping of a stop to its error), so nothing runs unarmed.
    func enter<T>(_ runtime: JSRuntime, _ entry: Entry, _ body: () throws -> T) throws -> T {
        switch entry {
        case .call(let context):
            let turn = try beginCallTurn(runtime, context)
            let outcome: Result<T, any Error>
            do { outcome = .success(try body()) } catch { outcome = .failure(error) }
            return try endCallTurn(runtime, turn, outcome)
        case .script(let macro, let timeLimit):
            try refuseIfPaused(runtime, macro: macro)
            let outermost = runtime.entryDepth == 0
            // A macro called synchronously answers for its own code (a lib file's load has set its owner).
            let previousOwner = runtime.currentOwner
            if outermost, previousOwner == nil, let macro { runtime.currentOwner = runtime.macroOwners[macro] }
            defer { runtime.currentOwner = previousOwner }
            do {
                let transaction = beginTransaction(runtime, participants: nil)
                let outcome: Result<T, any Error>
                do { outcome = .success(try runtime.armed(timeLimit: timeLimit ?? self.timeLimit, macro: macro, body)) } catch { outcome = .failure(error) }
                return try endTransaction(runtime, transaction, outcome)
            } catch var error as MacroError {
                if error.macro == nil { error.macro = macro }
                if outermost { exceptionHandler(error) }
                throw error
            }
        case .housekeeping(let macro, let timeLimit):
            try refuseIfPaused(runtime, macro: macro)
            return try runtime.armed(timeLimit: timeLimit ?? self.timeLimit, macro: macro, body)
        }
    }

    private func refuseIfPaused(_ runtime: JSRuntime, macro: String?) throws {
        if runtime.entryDepth == 0, let reason = paused.current { throw pausedError(reason, macro: macro) }
    }

    /// A call's turn in progress (``Entry/call(_:)``), from ``beginCallTurn(_:_:settings:)`` to ``endCallTurn(_:_:failure:)``.
    struct CallTurn {
        fileprivate let context: CallContext?
        fileprivate let previousCall: CallContext?
        fileprivate let previousRunning: Int
        fileprivate let deadlineBound: Bool
        fileprivate let transaction: Transaction
        fileprivate let armed: JSRuntime.ArmedEntry
        /// The turn observer, read with the other settings when the turn began.
        fileprivate let observer: (@Sendable () -> Void)?
        /// When the turn began (uptime nanoseconds), for the run's record.
        fileprivate let began: UInt64
    }

    /// Begins a call's turn (``Entry/call(_:)``): the time limit is the smaller of the engine's
    /// and what is left of the call's deadline; the call is the runtime's current one; the
    /// participants' turn begins (outermost entry) and the watchdog is armed. Every
    /// ``beginCallTurn(_:_:settings:)`` that returns is followed by one ``endCallTurn(_:_:failure:)``; the
    /// two bracket the JavaScript without a closure (a call's first run is the hot path).
    /// `settings`: ``turnSettings`` when the caller read them already.
    func beginCallTurn(_ runtime: JSRuntime, _ context: CallContext?, settings: TurnSettings? = nil) throws -> CallTurn {
        try refuseIfPaused(runtime, macro: context?.macro)
        // The settings in one read, and one clock read for the deadline, the watchdog and the
        // occupancy record; the limits in nanoseconds (no 128-bit `Duration` arithmetic).
        let settings = settings ?? turnSettings
        var limit = settings.timeLimitNanoseconds
        let now = NIODeadline.now()
        var deadlineBound = false
        if let context {
            let remaining = (context.deadline - now).nanoseconds
            guard remaining > 0 else {
                throw MacroError(code: .timeout, message: "timed out after \(context.budget.milliseconds) ms", macro: context.macro)
            }
            if remaining < limit { limit = remaining; deadlineBound = true }
        }
        let previousCall = runtime.currentCall, previousRunning = runtime.watchdog.runningCall
        runtime.currentCall = context
        runtime.watchdog.runningCall = context?.id ?? 0
        let transaction = beginTransaction(runtime, participants: settings.participants)
        let armed = runtime.arm(nanoseconds: limit, now: now)
        return CallTurn(
            context: context, previousCall: previousCall, previousRunning: previousRunning, deadlineBound: deadlineBound,
            transaction: transaction, armed: armed, observer: settings.turnObserver, began: now.uptimeNanoseconds)
    }

    /// Ends a call's turn with what its JavaScript gave: the watchdog's stop becomes its error,
    /// the participants commit (or roll back), the turn observer runs after the outermost entry.
    func endCallTurn<T>(_ runtime: JSRuntime, _ turn: CallTurn, _ outcome: Result<T, any Error>) throws -> T {
        try Self.ending(outcome) { failure in try endCallTurn(runtime, turn, failure: failure) }
    }

    /// ``endCallTurn(_:_:_:)`` without the result, which the caller keeps (no generic value
    /// carried through the turn's end): `failure` is the JavaScript's error, nil when it gave a
    /// result. Returns when that result stands; throws the turn's error otherwise (always when
    /// `failure` is set).
    func endCallTurn(_ runtime: JSRuntime, _ turn: CallTurn, failure: (any Error)?) throws {
        defer {
            runtime.currentCall = turn.previousCall
            runtime.watchdog.runningCall = turn.previousRunning
            if runtime.entryDepth == 0 { turn.observer?() }
        }
        do {
            var failure = failure
            do { try runtime.disarm(turn.armed, failure: failure, macro: turn.context?.macro) } catch { failure = error }
            // The run's record reads what the turn changed before it commits or rolls back.
            if let context = turn.context, let runs = context.runs, let draft = context.draft, turn.transaction.participants != nil {
                // The clock the occupancy read as the entry ended (no second read), when it did.
                let lastEnd = runtime.occupancy.lastEnd
                let ended = lastEnd >= turn.began ? lastEnd : NIODeadline.now().uptimeNanoseconds
                runs.turnEnding(draft, failed: failure != nil || runtime.turnFailed, began: turn.began, ended: ended)
            }
            try endTransaction(runtime, turn.transaction, failure: failure)
        } catch var error as MacroError where error.code == .timeout && turn.deadlineBound {
            error.message = "timed out after \(turn.context!.budget.milliseconds) ms"
            throw error
        }
    }

    /// A turn of the participants in progress (only the outermost entry's is one).
    struct Transaction {
        fileprivate let participants: [any TurnParticipant]?
    }

    /// Begins one atomic turn of the participants (only at the outermost entry); `participants`:
    /// ``turnParticipants`` when the caller read them already.
    private func beginTransaction(_ runtime: JSRuntime, participants: [any TurnParticipant]?) -> Transaction {
        guard runtime.entryDepth == 0 else { return Transaction(participants: nil) }
        let participants = participants ?? turnParticipants
        participants.forEach { $0.beginTurn() }
        runtime.turnFailed = false
        runtime.inTransaction = true
        return Transaction(participants: participants)
    }

    /// ``endTransaction(_:_:failure:)`` carrying the run's result.
    private func endTransaction<T>(_ runtime: JSRuntime, _ transaction: Transaction, _ outcome: Result<T, any Error>) throws -> T {
        try Self.ending(outcome) { failure in try endTransaction(runtime, transaction, failure: failure) }
    }

    /// Ends a turn with `outcome`: `end` gets its failure (nil for a result) and throws when the
    /// turn failed (always, given a failure); then the result is returned.
    private static func ending<T>(_ outcome: Result<T, any Error>, _ end: (_ failure: (any Error)?) throws -> Void) throws -> T {
        switch outcome {
        case .success(let value):
            try end(nil)
            return value
        case .failure(let error):
            try end(error)
            throw error  // not reached: a failed turn throws
        }
    }

    /// Ends the turn ``beginTransaction(_:participants:)`` began: commits it when the run
    /// succeeded (`failure` nil) and no part of it failed, else rolls it back (and after a stop
    /// runs what the stopped run left queued, see ``drainAfterStop(_:_:)``); then what waited for
    /// the turn's end. Throws `failure` when set.
    private func endTransaction(_ runtime: JSRuntime, _ transaction: Transaction, failure: (any Error)?) throws {
        guard let participants = transaction.participants else {
            if let failure { throw failure }
            return
        }
        defer {
            runtime.inTransaction = false
            // The runs that ended in this turn, now that their records have its changes (before
            // their callers hear of them).
            if !runtime.runsEnding.isEmpty {
                for ending in runtime.runsEnding {
                    if let draft = ending.context.draft { runtime.recordFinished(ending.context, draft, in: ending.runs, outcome: ending.outcome, atTurnEnd: true) }
                }
                runtime.runsEnding.removeAll(keepingCapacity: true)
            }
            if !runtime.afterTurn.isEmpty {
                let waiting = runtime.afterTurn
                runtime.afterTurn.removeAll()
                waiting.forEach { $0() }
            }
        }
        guard let failure else {
            if runtime.turnFailed { participants.forEach { $0.rollbackTurn() } } else { participants.forEach { $0.commitTurn() } }
            return
        }
        participants.forEach { $0.rollbackTurn() }
        if let stop = failure as? MacroError, [.timeout, .cancelled, .memoryLimit].contains(stop.code) {
            drainAfterStop(runtime, participants)
        }
        throw failure
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
