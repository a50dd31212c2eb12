/// The methods macrod answers, and the named params each accepts. A request is matched against
/// this table before its params are looked at, so an unknown method is -32601 whatever its params.
package enum RPCMethod: String, CaseIterable, Sendable {
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

    /// The params it accepts, in documentation order. `nil`: the method checks its own keys
    /// (`progress.set` takes the configured channel names).
    package var paramNames: [String]? {
        switch self {
        case .call: ["name", "args", "timeoutMs", "announce"]
        case .source, .delete, .unquarantine: ["name"]
        case .save, .check: ["name", "source"]
        case .cancel: ["call"]
        case .subscribe, .unsubscribe: ["events"]
        case .eval: ["source", "timeoutMs", "call"]
        case .logRecent: ["limit"]
        case .stats: ["name", "reset"]
        case .profile: ["name", "args", "runs", "timeoutMs"]
        case .progressSet: nil
        case .list, .types, .running, .progressGet, .status, .resume: []
        }
    }

    /// Whether a batch of only such requests may leave its journal append and replies to the
    /// batch queued behind it (``GroupCommit``): every effect they have is in the progress model,
    /// which a restart rolls back with the unwritten journal, so answering them -32006 then is
    /// true. A `macro.save`, `macro.delete`, `subscribe` or `macro.stats` reset is committed with
    /// its own batch.
    package var defersCommit: Bool {
        switch self {
        case .call, .progressGet, .progressSet, .list, .source, .check, .types, .running, .status, .logRecent: true
        default: false
        }
    }

    /// Whether a request that finished but whose reply was still held for its batch's commit may
    /// run again in the next process after an engine restart: its effects were only in the
    /// progress model (never journaled, never published), or running it twice is the same as once
    /// (`subscribe`, `unsubscribe`: the connection's subscriptions are handed over).
    package var replayableWhenFinished: Bool { defersCommit || self == .subscribe || self == .unsubscribe }

    /// Answered on the connection's thread, never queued behind the engine: they must work while
    /// a macro keeps the engine busy.
    package var bypassesEngine: Bool { self == .running || self == .cancel }
}
