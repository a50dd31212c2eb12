import MacroEngineCore
import MacroRPC

/// The triggers: `macro.trigger` (fire one by hand) and `macro.triggers` (what is armed).
extension EngineMethods {
    /// `macro.trigger {name, event?}`: runs macro `name` now, as its triggers would, with
    /// `event` (an object; `kind` is set to `manual`), under its run mode. Answers
    /// `{name, outcome: "started", call}`, `{outcome: "queued"}` or `{outcome: "dropped", reason}`.
    func trigger(_ request: MethodRequest) throws -> MethodReply {
        let params = request.params
        let name = try params.macroName()
        guard let entry = library.entry(named: name), entry.version > 0 else {
            throw RPCError(code: RPCError.noSuchMacro, message: "no macro named '\(name)' is loaded")
        }
        var fields: OrderedFields = [:]
        switch params.value["event"] {
        case .null, .undefined: break
        case .object(let given): fields = given
        default: throw params.invalid("event", "must be an object (the event the macro is given)")
        }
        fields["kind"] = "manual"
        switch library.triggers.fire(name, event: .object(fields)) {
        case .started(let call): return .value(["name": .string(name), "outcome": "started", "call": .number(Double(call))])
        case .queued: return .value(["name": .string(name), "outcome": "queued"])
        case .dropped(let reason): return .value(["name": .string(name), "outcome": "dropped", "reason": .string(reason)])
        }
    }

    /// `macro.triggers {name?}`: per macro with triggers, its mode, pause, counts, last run,
    /// and each trigger with its next fire time.
    func triggers(_ request: MethodRequest) throws -> MethodReply {
        let all = library.triggers.status()
        guard case .string(let name) = request.params.value["name"] else { return .value(.array(all)) }
        return .value(.array(all.filter { $0["name"] == .string(name) }))
    }
}
