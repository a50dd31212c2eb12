import MacroEngineCore
import MacroRPC

/// The run records (`macro runs`, the dashboard): the list, and one run whole.
extension EngineMethods {
    private var runs: RunLog { persistence.runs }

    /// `run.list {name?, failed?, limit?}`: `[{id, macro, origin, started, ok, ms, error?}]`,
    /// oldest first: every macro's (or `name`'s), only failures with `failed: true`, the last
    /// `limit` (default 100).
    func runList(_ request: MethodRequest) throws -> MethodReply {
        let params = request.params
        let name = params.value["name"] == .undefined ? nil : try params.macroName()
        let failed: Bool
        switch params.value["failed"] {
        case .undefined, .bool(false): failed = false
        case .bool(true): failed = true
        default: throw params.invalid("failed", "must be true or false")
        }
        let limit: Int
        switch params.value["limit"] {
        case .undefined: limit = 100
        case .number(let n) where n.rounded() == n && n >= 1 && n <= 1_000_000: limit = Int(n)
        default: throw params.invalid("limit", "must be a whole number from 1 to 1000000")
        }
        return .value(.array(runs.list(macro: name, failed: failed, limit: limit).map(\.summary)))
    }

    /// `run.get {id}`: the whole record: arguments, result or error with its location, console
    /// lines, the changes (kept or rolled back), the values before, timings. -32602 when no run
    /// with that id is kept.
    func runGet(_ request: MethodRequest) throws -> MethodReply {
        let params = request.params
        guard case .number(let n) = params.value["id"], n.rounded() == n, n >= 1, n <= 1e15 else {
            throw params.invalid("id", params.value["id"] == .undefined ? "is required" : "must be a run id (a whole number, as run.list gives)")
        }
        guard let record = runs.record(Int(n)) else {
            throw params.invalid("id", "no run \(Int(n)) is kept (run.list lists them; records roll off past runs_kept, failed_runs_kept and runs_bytes)")
        }
        return .value(record.json)
    }
}
