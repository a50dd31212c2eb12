/// The methods macrod answers: the one table of the protocol. Each method has one entry, in this
/// file: its case, its line in ``descriptor`` (its named params, the lane it runs on, how its
/// batch commits) and, for the engine lane, its handler (its line in ``handle(with:_:)`` and
/// the requirement of ``RPCMethodHandlers`` it names). macrod looks a request up here before it
/// reads its params (an unknown method is -32601 whatever its params); `macro` names the methods
/// it calls by these cases, never by strings.
///
/// Adding a method: its entry here, and its handler in the `*Methods.swift` file of its kind in
/// macrod (the compiler asks for it: macrod's `EngineMethods` conforms to
/// ``RPCMethodHandlers``). docs/design.md shows an example.
public enum RPCMethod: String, CaseIterable, Sendable {
    case call = "macro.call"
    case list = "macro.list"
    case source = "macro.source"
    case save = "macro.save"
    case check = "macro.check"
    case delete = "macro.delete"
    case types = "macro.types"
    case running = "macro.running"
    case cancel = "macro.cancel"
    case progressGet = "progress.get"
    case progressSet = "progress.set"
    case subscribe
    case unsubscribe
    case status = "engine.status"
    case eval = "engine.eval"
    case logRecent = "log.recent"
    case stats = "macro.stats"
    case profile = "macro.profile"
    case unquarantine = "macro.unquarantine"
    case resume = "engine.resume"
    case trigger = "macro.trigger"
    case triggers = "macro.triggers"
    case storeGet = "store.get"
    case storeSet = "store.set"
    case storeDelete = "store.delete"
    case storeList = "store.list"
    case runList = "run.list"
    case runGet = "run.get"
    case history = "macro.history"
    case diff = "macro.diff"
    case rollback = "macro.rollback"
    case auditRecent = "audit.recent"
    case debugStart = "debug.start"
    case debugList = "debug.list"
    case debugSetBreakpoints = "debug.setBreakpoints"
    case debugSetExceptionBreakpoints = "debug.setExceptionBreakpoints"
    case debugSetFunctionBreakpoints = "debug.setFunctionBreakpoints"
    case debugRun = "debug.run"
    case debugPause = "debug.pause"
    case debugRequest = "debug.request"
    case debugTerminate = "debug.terminate"

    /// Where a method runs.
    public enum Lane: Sendable {
        /// On the engine's loop, in arrival order, one batch per read (the engine lane).
        case engine
        /// On the connection's thread, never queued behind the engine, so that it works while a
        /// macro keeps the engine busy (the control lane).
        case control
        /// On the control lane from the committed values when the asking connection has nothing
        /// on the engine (so its own earlier requests are seen), else on the engine lane.
        case controlWhenIdle
        /// By the debug sessions (`debug.*`), each in a process of its own: never queued behind
        /// the daemon's engine, nothing of it journaled.
        case debug
    }

    /// How a method's batch is committed (see macrod's `GroupCommit`).
    public enum Commit: Sendable {
        /// Every effect is in the progress model, which an engine restart rolls back with the
        /// unwritten journal: the batch may leave its journal append and replies to the batch
        /// queued behind it (answering them -32006 "nothing was kept" after a restart is true),
        /// and a finished request whose reply was held may run again in the next process.
        case deferrable
        /// Committed with its own batch (files, subscriptions, statistics, the engine's state).
        case own
        /// Committed with its own batch; once finished it is not run again by the next process,
        /// except that running it twice is the same as once (`subscribe`, `unsubscribe`: the
        /// connection's subscriptions are handed over).
        case ownIdempotent
    }

    /// A method's entry in the table.
    public struct Descriptor: Sendable {
        /// The named params it accepts, in documentation order; nil when the method checks its
        /// own keys (`progress.set` takes the configured channel names).
        public let params: [String]?
        /// Where it runs.
        public let lane: Lane
        /// How its batch commits.
        public let commit: Commit
    }

    /// The table: one line per method.
    public var descriptor: Descriptor {
        switch self {
        case .call: Descriptor(params: ["name", "args", "timeoutMs", "announce", "console"], lane: .engine, commit: .deferrable)
        case .list: Descriptor(params: [], lane: .engine, commit: .deferrable)
        case .source: Descriptor(params: ["name"], lane: .engine, commit: .deferrable)
        case .save: Descriptor(params: ["name", "source"], lane: .engine, commit: .own)
        case .check: Descriptor(params: ["name", "source"], lane: .engine, commit: .deferrable)
        case .delete: Descriptor(params: ["name"], lane: .engine, commit: .own)
        case .types: Descriptor(params: [], lane: .engine, commit: .deferrable)
        case .running: Descriptor(params: [], lane: .control, commit: .deferrable)
        case .cancel: Descriptor(params: ["call"], lane: .control, commit: .own)
        case .progressGet: Descriptor(params: [], lane: .controlWhenIdle, commit: .deferrable)
        case .progressSet: Descriptor(params: nil, lane: .engine, commit: .deferrable)
        case .subscribe: Descriptor(params: ["events"], lane: .engine, commit: .ownIdempotent)
        case .unsubscribe: Descriptor(params: ["events"], lane: .engine, commit: .ownIdempotent)
        case .status: Descriptor(params: [], lane: .engine, commit: .deferrable)
        case .eval: Descriptor(params: ["source", "timeoutMs", "call"], lane: .engine, commit: .own)
        case .logRecent: Descriptor(params: ["limit"], lane: .engine, commit: .deferrable)
        case .stats: Descriptor(params: ["name", "reset"], lane: .engine, commit: .own)
        case .profile: Descriptor(params: ["name", "args", "runs", "timeoutMs"], lane: .engine, commit: .own)
        case .unquarantine: Descriptor(params: ["name"], lane: .engine, commit: .own)
        case .resume: Descriptor(params: [], lane: .engine, commit: .own)
        case .trigger: Descriptor(params: ["name", "event"], lane: .engine, commit: .own)
        case .triggers: Descriptor(params: ["name"], lane: .engine, commit: .deferrable)
        case .storeGet: Descriptor(params: ["name", "key"], lane: .engine, commit: .deferrable)
        // A store is in memory, journaled like the model: a restart rolls back what the journal lacks.
        case .storeSet: Descriptor(params: ["name", "key", "value"], lane: .engine, commit: .deferrable)
        case .storeDelete: Descriptor(params: ["name", "key"], lane: .engine, commit: .deferrable)
        case .storeList: Descriptor(params: [], lane: .engine, commit: .deferrable)
        case .runList: Descriptor(params: ["name", "failed", "limit"], lane: .engine, commit: .deferrable)
        case .runGet: Descriptor(params: ["id"], lane: .engine, commit: .deferrable)
        case .history: Descriptor(params: ["name"], lane: .engine, commit: .deferrable)
        case .diff: Descriptor(params: ["name", "from", "to"], lane: .engine, commit: .deferrable)
        case .rollback: Descriptor(params: ["name", "version"], lane: .engine, commit: .own)
        case .auditRecent: Descriptor(params: ["limit", "name", "kind"], lane: .engine, commit: .deferrable)
        case .debugStart: Descriptor(params: ["name", "args", "stopOnEntry", "idleTimeoutMs", "evaluateLimitMs", "run"], lane: .debug, commit: .own)
        case .debugList: Descriptor(params: [], lane: .debug, commit: .own)
        case .debugSetBreakpoints: Descriptor(params: ["session", "path", "breakpoints"], lane: .debug, commit: .own)
        case .debugSetExceptionBreakpoints: Descriptor(params: ["session", "all", "uncaught"], lane: .debug, commit: .own)
        case .debugSetFunctionBreakpoints: Descriptor(params: ["session", "breakpoints"], lane: .debug, commit: .own)
        case .debugRun, .debugPause, .debugTerminate: Descriptor(params: ["session"], lane: .debug, commit: .own)
        case .debugRequest: Descriptor(params: ["session", "op", "args"], lane: .debug, commit: .own)
        }
    }

    /// The named params it accepts (``Descriptor/params``).
    public var paramNames: [String]? { descriptor.params }

    /// Whether a batch of only such requests may leave its journal append and replies to the
    /// batch queued behind it (``Commit/deferrable``).
    public var defersCommit: Bool { descriptor.commit == .deferrable }

    /// Whether a request that finished but whose reply was still held for its batch's commit may
    /// run again in the next process after an engine restart.
    public var replayableWhenFinished: Bool { descriptor.commit != .own }

    /// Answered on the connection's thread, never queued behind the engine (``Lane/control``).
    public var bypassesEngine: Bool { descriptor.lane == .control }
}

/// The table's handler column: one handler per method of the engine lane, each taking the same
/// kind of request and giving the same kind of reply. macrod's `EngineMethods` conforms (its
/// `*Methods.swift` files); the control and debug lanes are answered by their own types, off the
/// engine's thread.
public protocol RPCMethodHandlers {
    /// What a handler is given (macrod: the checked params, the request's id and call id, the connection).
    associatedtype Request
    /// What a handler answers (macrod: a value now, or a future one).
    associatedtype Reply

    /// `macro.call`
    func call(_ request: Request) throws -> Reply
    /// `macro.list`
    func list(_ request: Request) throws -> Reply
    /// `macro.source`
    func source(_ request: Request) throws -> Reply
    /// `macro.save`
    func save(_ request: Request) throws -> Reply
    /// `macro.check`
    func check(_ request: Request) throws -> Reply
    /// `macro.delete`
    func delete(_ request: Request) throws -> Reply
    /// `macro.types`
    func types(_ request: Request) throws -> Reply
    /// `progress.get` (on the engine lane while the connection has requests there)
    func progressGet(_ request: Request) throws -> Reply
    /// `progress.set`
    func progressSet(_ request: Request) throws -> Reply
    /// `subscribe`
    func subscribe(_ request: Request) throws -> Reply
    /// `unsubscribe`
    func unsubscribe(_ request: Request) throws -> Reply
    /// `engine.status`
    func status(_ request: Request) throws -> Reply
    /// `engine.eval`
    func eval(_ request: Request) throws -> Reply
    /// `log.recent`
    func logRecent(_ request: Request) throws -> Reply
    /// `macro.stats`
    func stats(_ request: Request) throws -> Reply
    /// `macro.profile`
    func profile(_ request: Request) throws -> Reply
    /// `macro.unquarantine`
    func unquarantine(_ request: Request) throws -> Reply
    /// `engine.resume`
    func resume(_ request: Request) throws -> Reply
    /// `macro.trigger`
    func trigger(_ request: Request) throws -> Reply
    /// `macro.triggers`
    func triggers(_ request: Request) throws -> Reply
    /// `store.get`
    func storeGet(_ request: Request) throws -> Reply
    /// `store.set`
    func storeSet(_ request: Request) throws -> Reply
    /// `store.delete`
    func storeDelete(_ request: Request) throws -> Reply
    /// `store.list`
    func storeList(_ request: Request) throws -> Reply
    /// `run.list`
    func runList(_ request: Request) throws -> Reply
    /// `run.get`
    func runGet(_ request: Request) throws -> Reply
    /// `macro.history`
    func history(_ request: Request) throws -> Reply
    /// `macro.diff`
    func diff(_ request: Request) throws -> Reply
    /// `macro.rollback`
    func rollback(_ request: Request) throws -> Reply
    /// `audit.recent`
    func auditRecent(_ request: Request) throws -> Reply
}

extension RPCMethod {
    /// The handler column of the table: runs the method's handler in `handlers`; nil for the
    /// methods of the control and debug lanes, which never run on the engine lane.
    @inlinable
    public func handle<Handlers: RPCMethodHandlers>(with handlers: Handlers, _ request: Handlers.Request) throws -> Handlers.Reply? {
        switch self {
        case .call: try handlers.call(request)
        case .list: try handlers.list(request)
        case .source: try handlers.source(request)
        case .save: try handlers.save(request)
        case .check: try handlers.check(request)
        case .delete: try handlers.delete(request)
        case .types: try handlers.types(request)
        case .progressGet: try handlers.progressGet(request)
        case .progressSet: try handlers.progressSet(request)
        case .subscribe: try handlers.subscribe(request)
        case .unsubscribe: try handlers.unsubscribe(request)
        case .status: try handlers.status(request)
        case .eval: try handlers.eval(request)
        case .logRecent: try handlers.logRecent(request)
        case .stats: try handlers.stats(request)
        case .profile: try handlers.profile(request)
        case .unquarantine: try handlers.unquarantine(request)
        case .resume: try handlers.resume(request)
        case .trigger: try handlers.trigger(request)
        case .triggers: try handlers.triggers(request)
        case .storeGet: try handlers.storeGet(request)
        case .storeSet: try handlers.storeSet(request)
        case .storeDelete: try handlers.storeDelete(request)
        case .storeList: try handlers.storeList(request)
        case .runList: try handlers.runList(request)
        case .runGet: try handlers.runGet(request)
        case .history: try handlers.history(request)
        case .diff: try handlers.diff(request)
        case .rollback: try handlers.rollback(request)
        case .auditRecent: try handlers.auditRecent(request)
        case .running, .cancel, .debugStart, .debugList, .debugSetBreakpoints, .debugSetExceptionBreakpoints, .debugSetFunctionBreakpoints,
            .debugRun, .debugPause, .debugRequest, .debugTerminate:
            nil
        }
    }
}

/// The notifications macrod sends (JSON-RPC requests without an id).
public enum RPCNotification: String, CaseIterable, Sendable {
    /// `{"id": ID, "call": N}`: a `macro.call` sent with `announce: true` started as call N.
    case started = "macro.started"
    /// `{"id": ID, "call": N, "level": L, "message": M}`: a call's `console.*` output, to its caller.
    case console = "macro.console"
    /// `{"name", "version"}` (subscription `macros`): a macro file was loaded.
    case loaded = "macro.loaded"
    /// `{"name", "file", "error"}` (subscription `macros`): a macro file failed to load.
    case failed = "macro.failed"
    /// `{"name"}` (subscription `macros`): a macro file was removed.
    case removed = "macro.removed"
    /// `{"name", "kind", "call", "event"}` (subscription `macros`): a trigger started a run.
    case triggered = "macro.triggered"
    /// `{id, macro, origin, started, ok, ms, error?}` (subscription `runs`): a run ended and was recorded.
    case runRecorded = "run.recorded"
    /// A debug session stopped (breakpoint, step, exception, pause, entry), to its connection.
    case debugStopped = "debug.stopped"
    /// A debug session's console output, to its connection.
    case debugOutput = "debug.output"
    /// A debug session ended, with its result and the changes it would have made.
    case debugTerminated = "debug.terminated"
    /// The channels that changed, with their new values (subscription `progress`).
    case progressChanged = "progress.changed"
    /// A log record (subscription `log`).
    case log
}
