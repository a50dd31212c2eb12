import CJavaScriptCore
import NIOCore

/// One call from Swift and everything it starts: its deadline (covering awaited time), its
/// timers, and the promise that settles it, or its outcome when it ended in its first turn
/// before anyone needed a promise. Lives on the engine loop only.
final class CallContext {
    let id: Int
    let started: NIODeadline
    let macro: String?
    let deadline: NIODeadline
    let budget: Duration
    /// What its caller waits on: made when the call goes pending (or at its start, when it began
    /// inside another turn, whose end the caller hears it after).
    var promise: EventLoopPromise<MacroValue>?
    /// The outcome of a call that ended in its first turn without a promise (``CallStart/ended(_:)``).
    var outcome: Result<MacroValue, any Error>?
    /// The file answerable for the call's code, its jobs and its timers.
    let owner: CodeOwner?
    var timers: Set<Int> = []
    var finished = false
    var failed = false
    var deadlineTask: Scheduled<Void>?
    /// Where the run is recorded (the engine's ``MacroEngine/runLog`` when it began), and its record so far.
    var runs: RunLog?
    var draft: RunDraft?
    /// Rewrites the call's failure before the caller hears it (``MacroLibrary``'s note on a lib
    /// file that did not load), after the exception handler saw it.
    let explainer: (any CallFailureExplainer)?

    /// `budgetNanoseconds`: `budget` in nanoseconds (the engine's call deadline has it so).
    init(
        id: Int, macro: String?, budget: Duration, budgetNanoseconds: Int64, promise: EventLoopPromise<MacroValue>?, owner: CodeOwner?,
        explainer: (any CallFailureExplainer)?
    ) {
        self.id = id
        self.macro = macro
        self.owner = owner
        self.budget = budget
        // One clock read for both (a call's start and its deadline).
        let now = NIODeadline.now()
        self.started = now
        self.deadline = now + .nanoseconds(budgetNanoseconds)
        self.promise = promise
        self.explainer = explainer
    }
}

/// A macro call's outcome as its start left it: ended in its first turn, or pending (its future
/// completes on the engine's loop).
public enum CallStart: Sendable {
    /// The call ended in its first turn (a plain result, or a failure).
    case ended(Result<MacroValue, any Error>)
    /// The call awaits: the future completes when it settles.
    case pending(EventLoopFuture<MacroValue>)
}

/// Rewrites a call's failure before its caller hears of it (``MacroLibrary`` adds which lib file
/// did not load to a `ReferenceError`). A class, so passing one along costs no allocation.
protocol CallFailureExplainer: AnyObject, Sendable {
    /// The error the caller gets instead of `error`.
    func explain(_ error: any Error) -> any Error
}

/// A pending setTimeout/setInterval: the callback and its arguments are protected from GC
/// until the timer fires for the last time or is cleared.
final class TimerEntry {
    let callback: JSObjectRef
    let arguments: [JSValueRef]
    let interval: TimeAmount?
    let context: CallContext?
    /// The file answerable for the callback: the owner of the code that armed the timer.
    let owner: CodeOwner?
    /// Everything a call starts ends by the call's deadline: a timer (and any timer its callback
    /// sets, however often it re-arms itself) stops firing here, even after the call settled.
    let expires: NIODeadline
    var scheduled: Scheduled<Void>?

    init(callback: JSObjectRef, arguments: [JSValueRef], interval: TimeAmount?, context: CallContext?, owner: CodeOwner?, expires: NIODeadline) {
        self.owner = owner
        self.callback = callback
        self.arguments = arguments
        self.interval = interval
        self.context = context
        self.expires = expires
    }
}

extension MacroEngine {
    /// Calls `function` as a macro call: a promise result settles the call when it settles; the
    /// whole call, awaited time included, must finish by `budget` (default: the engine's call
    /// deadline), else it fails with `.timeout` and its timers are cancelled. Must run on the loop.
    func invoke(
        _ function: JSObjectRef, arguments: [MacroValue], macro: String?, budget: Duration?, callID: Int? = nil,
        explainer: (any CallFailureExplainer)? = nil, runtime: JSRuntime
    ) -> EventLoopFuture<MacroValue> {
        switch invokeOutcome(function, arguments: arguments, macro: macro, budget: budget, callID: callID, explainer: explainer, runtime: runtime) {
        case .ended(let result): eventLoop.makeCompletedFuture(result)
        case .pending(let future): future
        }
    }

    /// ``invoke(_:arguments:macro:budget:callID:explainer:runtime:)`` without a future for a call
    /// that ends in its first turn (most do): its outcome comes back as it is, and a promise is
    /// made only for a call that goes pending (or one started inside another turn, whose
    /// caller hears it once that turn has ended).
    func invokeOutcome(
        _ function: JSObjectRef, arguments: [MacroValue], macro: String?, budget: Duration?, callID: Int? = nil,
        explainer: (any CallFailureExplainer)? = nil, runtime: JSRuntime
    ) -> CallStart {
        let owner = macro.flatMap { runtime.owner(ofMacro: $0) }
        // The settings in one read for the call's deadline and its turn.
        let settings = turnSettings
        let context = CallContext(
            id: callID ?? nextCallID(), macro: macro, budget: budget ?? settings.callDeadline,
            budgetNanoseconds: budget?.nanoseconds ?? settings.callDeadlineNanoseconds,
            promise: runtime.inTransaction ? eventLoop.makePromise(of: MacroValue.self) : nil, owner: owner,
            explainer: explainer)
        registerRunning(context)
        if let runs = settings.runs, let macro {
            context.runs = runs
            context.draft = runs.began(call: context.id, macro: macro, version: owner?.hash, arguments: arguments, spare: runtime.spareDraft.take())
        }
        do {
            // The helper's arguments: the function, the handlers' factory, then the macro's
            // arguments one by one (converted here, before the turn), or in one array when there
            // are more than the helpers of a fixed count take. In memory on the stack, where the
            // collector's conservative scan sees the converted values; no array per call.
            let count = arguments.count
            let packed = count >= JSRuntime.invokeArities
            try withUnsafeTemporaryAllocation(of: JSValueRef?.self, capacity: packed ? 3 : 2 + count) { buffer in
                buffer.initialize(repeating: nil)
                if packed {
                    buffer[2] = try runtime.jsArray(arguments).ref
                } else {
                    for index in 0..<count { buffer[2 + index] = try runtime.jsValue(arguments[index]).ref }
                }
                buffer[0] = function
                // The call's first turn: the invoke helper's arguments are the function, a free
                // slot for the handlers' factory, then the macro's arguments (or their array).
                let arity = packed ? nil : count
                // One API call runs the macro *and* attaches the handlers, so a rejection among this
                // turn's microtasks is seen in this turn (JSC drains microtasks at each API exit).
                // A plain result is converted inside the same armed entry: its getters and proxy
                // traps are JavaScript that may loop too.
                // The settle functions are made only when the macro returns a thenable (the helper
                // asks `handlers` for them): a plain result costs no function objects.
                buffer[1] = try settleFunctionFactory(runtime)
                let previous = runtime.invokingContext
                runtime.invokingContext = context
                let previousOwner = runtime.currentOwner
                if runtime.entryDepth == 0 { runtime.currentOwner = context.owner }
                defer {
                    runtime.invokingContext = previous
                    runtime.currentOwner = previousOwner
                }
                // The turn of ``enter(_:_:_:)``'s `.call`, bracketing the call without a closure,
                // and without a `Result` carried through its end: the turn's end throws when the
                // JavaScript failed or was stopped, else the value (or the conversion's failure,
                // which fails the call but not the turn) stands.
                let turn = try beginCallTurn(runtime, context, settings: settings)
                var value: MacroValue?
                var conversionFailure: MacroError?
                var failure: (any Error)?
                do {
                    let result = try runtime.call(runtime.invokeHelper(arity: arity), arguments: UnsafeBufferPointer(buffer), macro: macro)
                    if !runtime.isPendingSentinel(result) {
                        do { value = try runtime.macroValue(result) } catch let error as MacroError where error.code == .conversion {
                            if runtime.watchdog.fired != nil { failure = error } else { conversionFailure = error }
                        }
                    }
                } catch {
                    failure = error
                }
                try endCallTurn(runtime, turn, failure: failure)
                if let conversionFailure {
                    finish(context, .failure(conversionFailure), runtime: runtime)
                } else if let value {
                    finish(context, .success(value), runtime: runtime)
                } else if !context.finished {
                    // Pending: the deadline covers the awaited time. Scheduled work holds the engine
                    // weakly: it may fire after the engine is released, before the runtime is closed.
                    // Only a pending call is listed for cancel and shutdown (``JSRuntime/pendingCalls``):
                    // one that ends in its first turn is never seen there.
                    runtime.pendingCalls[ObjectIdentifier(context)] = context
                    context.deadlineTask = eventLoop.assumeIsolated().scheduleTask(deadline: context.deadline) { [weak self] in
                        self?.finish(context, .failure(MacroError(code: .timeout, message: "timed out after \(context.budget.milliseconds) ms", macro: macro)), runtime: runtime)
                    }
                }
            }
        } catch {
            finish(context, .failure(error), runtime: runtime)
        }
        if let promise = context.promise { return .pending(promise.futureResult) }
        if let outcome = context.outcome { return .ended(outcome) }
        // Pending: the promise its later turns settle.
        let promise = eventLoop.makePromise(of: MacroValue.self)
        context.promise = promise
        return .pending(promise.futureResult)
    }

    /// Ends the call once: reports a failure to the exception handler, cancels the deadline and,
    /// on failure, every timer the call created (so nothing of it runs later).
    func finish(_ context: CallContext, _ result: Result<MacroValue, any Error>, runtime: JSRuntime) {
        guard !context.finished else { return }
        context.finished = true
        if let deadlineTask = context.deadlineTask {
            // Only a call that went pending has a deadline task and is listed.
            deadlineTask.cancel()
            runtime.pendingCalls[ObjectIdentifier(context)] = nil
        }
        unregisterRunning(context.id)
        runtime.watchdog.cancellations.remove(context.id)
        if let runs = context.runs, let draft = context.draft {
            // Inside a turn (an async call resolving in a later turn, as a sync one in its
            // first), the record waits for the turn's end: what that turn changed is the run's.
            if runtime.inTransaction {
                runtime.runsEnding.append((runs, context, result))
            } else {
                runtime.recordFinished(context, draft, in: runs, outcome: result, atTurnEnd: false)
            }
        }
        // Inside a turn, the caller hears the outcome after the turn commits or rolls back. A
        // call still in its first turn has no promise yet: its outcome is kept, and its caller
        // reads it once that turn has ended (``invokeOutcome``).
        let deliver: (Result<MacroValue, any Error>) -> Void = { result in
            guard let promise = context.promise else {
                context.outcome = result
                return
            }
            if runtime.inTransaction { runtime.afterTurn.append { promise.completeWith(result) } } else { promise.completeWith(result) }
        }
        switch result {
        case .success(let value):
            deliver(.success(value))
        case .failure(var error):
            context.failed = true
            for id in context.timers { runtime.clearTimer(id) }
            context.timers.removeAll()
            if var macroError = error as? MacroError {
                if macroError.macro == nil { macroError.macro = context.macro }
                error = macroError
                exceptionHandler(macroError)
            }
            if let explainer = context.explainer { error = explainer.explain(error) }
            deliver(.failure(error))
        }
    }

    // MARK: Timers

    /// Installs setTimeout, clearTimeout, setInterval, clearInterval, queueMicrotask, sleep and
    /// the unhandled-rejection reporter. Called once from init, on the loop.
    func installTimers(runtime: JSRuntime) throws {
        // The closures reach the runtime through the (weakly held) engine: a closure kept by JSC
        // that held the runtime strongly would keep the context from being torn down.
        runtime.defineNativeGlobal("setTimeout") { [weak self] args in
            guard let self else { throw MacroError.engineGone }
            let runtime = self.runtime.value
            return runtime.context.number(Double(try self.addTimer(args, repeating: false, name: "setTimeout", runtime: runtime)))
        }
        runtime.defineNativeGlobal("setInterval") { [weak self] args in
            guard let self else { throw MacroError.engineGone }
            let runtime = self.runtime.value
            return runtime.context.number(Double(try self.addTimer(args, repeating: true, name: "setInterval", runtime: runtime)))
        }
        for name in ["clearTimeout", "clearInterval"] {
            runtime.defineNativeGlobal(name) { [weak self] args in
                guard let self else { throw MacroError.engineGone }
                let runtime = self.runtime.value
                if let id = args.first?.number.flatMap({ Int(exactly: $0) }) { runtime.clearTimer(id) }
                return runtime.context.undefined
            }
        }
        let helpers = try runtime.evaluateRaw(
            """
            (function () {
              "use strict";
              function describe(v) { return typeof v === "string" ? 'string "' + v + '"' : (typeof v === "number" ? String(v) : typeof v); }
              function sleep(ms) {
                if (typeof ms !== "number" || !isFinite(ms) || ms < 0)
                  throw new TypeError("sleep: expected a finite number of milliseconds >= 0, got " + describe(ms));
                return new Promise(function (resolve) { setTimeout(resolve, ms); });
              }
              function queueMicrotask(callback) {
                if (typeof callback !== "function")
                  throw new TypeError("queueMicrotask: expected a function, got " + describe(callback));
                Promise.resolve().then(callback);
              }
              return [sleep, queueMicrotask];
            })()
            """, file: nil)
        runtime.defineGlobal("sleep", JSValue(JSObjectGetPropertyAtIndex(runtime.context.ref, helpers.objectRef!, 0, nil), in: runtime.context), readOnly: true)
        runtime.defineGlobal("queueMicrotask", JSValue(JSObjectGetPropertyAtIndex(runtime.context.ref, helpers.objectRef!, 1, nil), in: runtime.context), readOnly: true)

        let reporter = runtime.makeFunction(name: "unhandledRejection") { [weak self] args in
            guard let self else { throw MacroError.engineGone }
            let reason = args.count > 1 ? args[1] : runtime.context.undefined
            var error = runtime.macroError(fromException: reason.ref, macro: runtime.currentCall?.macro, file: nil)
            if runtime.watchdog.fired != nil { error = runtime.stopError(error, macro: runtime.currentCall?.macro) }
            error.message = "unhandled promise rejection: \(error.message)"
            self.exceptionHandler(error)
            return runtime.context.undefined
        }
        JSGlobalContextSetUnhandledRejectionCallback(runtime.globalContext, reporter.objectRef, nil)
    }

    private func addTimer(_ args: [JSValue], repeating: Bool, name: String, runtime: JSRuntime) throws -> Int {
        guard let callback = args.first, callback.isFunction, let object = callback.objectRef else {
            throw MacroError.typeError("\(name): expected a function, got \(args.first?.typeDescription ?? "no argument")")
        }
        var delay = args.count > 1 ? (args[1].number ?? 0) : 0
        if !delay.isFinite || delay < 0 { delay = 0 }
        delay = min(delay, 2_147_483_647)
        let milliseconds = Int64(delay)
        let extra = args.dropFirst(2).map(\.ref)
        let context = runtime.currentCall
        // A timer set by a timer inherits its expiry; one set by a call, the call's deadline;
        // one set at load time or by a settled call's leftovers, a deadline of its own.
        let expires = runtime.currentTimerExpiry ?? context?.deadline ?? (.now() + .nanoseconds(callDeadline.nanoseconds))
        let entry = TimerEntry(
            callback: object, arguments: Array(extra),
            interval: repeating ? .milliseconds(max(1, milliseconds)) : nil, context: context, owner: runtime.currentOwner, expires: expires)
        JSValueProtect(runtime.context.ref, object)
        for value in extra { JSValueProtect(runtime.context.ref, value) }
        let id = runtime.nextTimerID()
        runtime.timers[id] = entry
        context?.timers.insert(id)
        entry.scheduled = eventLoop.assumeIsolated().scheduleTask(in: .milliseconds(repeating ? max(1, milliseconds) : milliseconds)) { [weak self] in
            self?.fire(id, runtime: runtime)
        }
        return id
    }

    private func fire(_ id: Int, runtime: JSRuntime) {
        guard let entry = runtime.timers[id], !runtime.isClosed else { return }
        if let context = entry.context, context.failed {
            runtime.clearTimer(id)
            return
        }
        if NIODeadline.now() >= entry.expires {
            runtime.clearTimer(id)
            let name = entry.context?.macro.map { "macro \($0)" } ?? "code run at load"
            logger.warning("a timer of \(name) was stopped: it outlived the deadline of the call that set it (call_deadline_ms)")
            return
        }
        if entry.interval == nil {
            runtime.timers[id] = nil
            entry.context?.timers.remove(id)
        }
        let previousExpiry = runtime.currentTimerExpiry
        runtime.currentTimerExpiry = entry.expires
        let previousOwner = runtime.currentOwner
        runtime.currentOwner = entry.owner
        defer {
            runtime.currentTimerExpiry = previousExpiry
            runtime.currentOwner = previousOwner
        }
        do {
            _ = try enter(runtime, .call(entry.context.flatMap { $0.finished ? nil : $0 })) {
                try runtime.call(entry.callback, arguments: entry.arguments, macro: entry.context?.macro)
            }
        } catch var error as MacroError {
            if error.macro == nil { error.macro = entry.context?.macro }
            if [.timeout, .cancelled, .memoryLimit].contains(error.code), let context = entry.context, !context.finished {
                // A stop ends the call whose turn it stopped: that turn may have been the call's
                // own continuation (the code after `await sleep(...)`), which then never settles;
                // the call fails now with the stop's error and position, not at its deadline.
                finish(context, .failure(error), runtime: runtime)
            } else {
                // A throwing callback is reported; the loop and the other timers go on.
                exceptionHandler(error)
            }
        } catch {}
        if let interval = entry.interval, runtime.timers[id] != nil {
            entry.scheduled = eventLoop.assumeIsolated().scheduleTask(in: interval) { [weak self] in self?.fire(id, runtime: runtime) }
        } else if entry.interval == nil {
            runtime.release(entry)
        }
    }
}

extension MacroEngine {
    /// The runtime's `__macroengine_handlers(fulfilled)` (made once, kept protected): returns a
    /// new function that settles the call the invoke helper is running (``JSRuntime/invokingContext``)
    /// with its argument, as a result (`true`) or as a rejection (`false`).
    func settleFunctionFactory(_ runtime: JSRuntime) throws -> JSValueRef {
        if let factory = runtime.handlersRef { return factory }
        // The runtime is reached through the (weakly held) engine, not held weakly itself: a weak
        // reference gives an object a side table, and then every retain and release of it takes
        // the slow path (the runtime is retained and released several times per call).
        let factory = runtime.makeFunction(name: "__macroengine_handlers") { [weak self] args in
            guard let self else { throw MacroError.engineGone }
            let runtime = self.runtime.value
            guard let context = runtime.invokingContext else {
                throw MacroError(code: .invalidArgument, message: "__macroengine_handlers: called outside a macro call")
            }
            if args.first.map({ JSValueToBoolean(runtime.context.ref, $0.ref) }) ?? true {
                return runtime.makeFunction(name: "resolve") { [weak self] args in
                    guard let self else { throw MacroError.engineGone }
                    let value = args.first ?? runtime.context.undefined
                    self.finish(context, Result { try runtime.macroValue(value) }, runtime: runtime)
                    return runtime.context.undefined
                }
            }
            return runtime.makeFunction(name: "reject") { [weak self] args in
                guard let self else { throw MacroError.engineGone }
                let reason = args.first ?? runtime.context.undefined
                // The turn in which the promise rejected is the failing one: undo its writes.
                runtime.turnFailed = true
                var error = runtime.macroError(fromException: reason.ref, macro: context.macro, file: nil)
                // Reading the reason ran its getters; a stop there is the call's outcome.
                if runtime.watchdog.fired != nil { error = runtime.stopError(error, macro: context.macro) }
                self.finish(context, .failure(error), runtime: runtime)
                return runtime.context.undefined
            }
        }
        let object = factory.objectRef!
        JSValueProtect(runtime.context.ref, object)
        runtime.handlersRef = object
        return object
    }
}

extension JSRuntime {
    /// How many arguments the invoke helpers that take them one by one go up to (0 to 4);
    /// more go in an array.
    static let invokeArities = 5

    /// The invoke helper for `arity` arguments (nil: any number, in an array): `(fn, handlers,
    /// a0, a1, ...)` or `(fn, handlers, args)`. It calls fn with the arguments (`this`
    /// undefined); a thenable result gets `handlers(true)` and `handlers(false)` as its
    /// callbacks and the pending sentinel is returned, any other result is returned as is.
    /// A direct call of fn costs no array and no `apply` (the stack shows the same frames: the
    /// helpers, named `__macroengine_invoke...`, are left out of it).
    func invokeHelper(arity: Int?) throws -> JSObjectRef {
        if !invokeHelperRefs.isEmpty { return invokeHelperRefs[arity ?? Self.invokeArities] }
        let check = """
              if (result !== null && (typeof result === "object" || typeof result === "function") && typeof result.then === "function") {
                result.then(handlers(true), handlers(false));
                return pending;
              }
              return result;
            """
        var helpers: [String] = []
        for arity in 0..<Self.invokeArities {
            let parameters = (0..<arity).map { "a\($0)" }.joined(separator: ", ")
            helpers.append(
                """
                function __macroengine_invoke\(arity)(fn, handlers\(arity == 0 ? "" : ", " + parameters)) {
                  var result = fn(\(parameters));
                \(check)
                }
                """)
        }
        helpers.append(
            """
            function __macroengine_invoke(fn, handlers, args) {
              var result = fn.apply(undefined, args);
            \(check)
            }
            """)
        let names = (0..<Self.invokeArities).map { "__macroengine_invoke\($0)" } + ["__macroengine_invoke"]
        let value = try evaluateRaw(
            "(function () {\nvar pending = {};\n" + helpers.joined(separator: "\n") + "\nreturn [" + names.joined(separator: ", ")
                + ", pending];\n})()", file: nil)
        let array = value.objectRef!
        var refs: [JSObjectRef] = []
        for index in 0...Self.invokeArities {
            let helper = JSValueToObject(context.ref, JSObjectGetPropertyAtIndex(context.ref, array, UInt32(index), nil), nil)!
            JSValueProtect(context.ref, helper)
            refs.append(helper)
        }
        let sentinel = JSValueToObject(context.ref, JSObjectGetPropertyAtIndex(context.ref, array, UInt32(Self.invokeArities + 1), nil), nil)!
        JSValueProtect(context.ref, sentinel)
        pendingSentinelRef = sentinel
        invokeHelperRefs = refs
        return refs[arity ?? Self.invokeArities]
    }

    func isPendingSentinel(_ value: JSValue) -> Bool {
        guard let sentinel = pendingSentinelRef, let object = value.objectRef else { return false }
        return object == sentinel
    }

    func nextTimerID() -> Int {
        timerCounter += 1
        return timerCounter
    }

    /// Fails every call still in flight (the engine is going away) so no promise is left unfulfilled.
    func cancelPendingCalls() {
        let calls = pendingCalls.values
        pendingCalls.removeAll()
        for context in calls where !context.finished {
            context.finished = true
            context.deadlineTask?.cancel()
            context.promise?.fail(MacroError(code: .cancelled, message: "the engine shut down before the call finished", macro: context.macro))
        }
    }

    /// Cancels and forgets a timer (no-op for unknown ids).
    func clearTimer(_ id: Int) {
        guard let entry = timers.removeValue(forKey: id) else { return }
        entry.scheduled?.cancel()
        entry.context?.timers.remove(id)
        release(entry)
    }

    func release(_ entry: TimerEntry) {
        guard !isClosed else { return }
        JSValueUnprotect(context.ref, entry.callback)
        for value in entry.arguments { JSValueUnprotect(context.ref, value) }
    }
}
