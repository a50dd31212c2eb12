/// The methods macrod answers: the one table of the protocol. Each method has one entry in
/// ``descriptor``: its named params, the lane it runs on and how its batch commits. macrod looks
/// a request up here before it reads its params (an unknown method is -32601 whatever its
/// params); `macro` names the methods it calls by these cases, never by strings.
///
/// Adding a method: a case here and its line in ``descriptor``; the compiler then asks for its
/// handler in macrod's method switch (`EngineMethods.run`), which calls a function in the
/// `*Methods.swift` file of its kind. docs/design.md shows an example.
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
    case debugStart = "debug.start"
    case debugList = "debug.list"
    case debugSetBreakpoints = "debug.setBreakpoints"
    case debugSetExceptionBreakpoints = "debug.setExceptionBreakpoints"
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
        /// By the debug sessions (`debug.*`), each in an engine and a thread of its own: never
        /// queued behind the daemon's engine, nothing of it journaled.
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
        case .call: Descriptor(params: ["name", "args", "timeoutMs", "announce"], lane: .engine, commit: .deferrable)
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
        case .debugStart: Descriptor(params: ["name", "args", "stopOnEntry", "idleTimeoutMs"], lane: .debug, commit: .own)
        case .debugList: Descriptor(params: [], lane: .debug, commit: .own)
        case .debugSetBreakpoints: Descriptor(params: ["session", "path", "breakpoints"], lane: .debug, commit: .own)
        case .debugSetExceptionBreakpoints: Descriptor(params: ["session", "all", "uncaught"], lane: .debug, commit: .own)
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
