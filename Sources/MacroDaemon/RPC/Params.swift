import MacroEngineCore
import MacroRPC

/// Typed access to a request's params with -32602 errors that name the parameter. Built only
/// for a known method (unknown methods are -32601 before params are looked at).
struct Params {
    let method: RPCMethod
    /// The params as an object (absent params and `[]` are `{}`).
    let value: MacroValue

    /// Checks the params' shape: an object whose keys the method knows, or nothing (absent or
    /// `[]`). Positional params and unknown keys are -32602 naming the problem.
    init(_ request: RPCRequest, method: RPCMethod) throws {
        self.method = method
        switch request.params {
        case .undefined:
            value = .object([:])
        case .array(let items) where items.isEmpty:
            value = .object([:])
        case .object(let fields):
            if let known = method.paramNames, let unknown = fields.keys.first(where: { !known.contains($0) }) {
                let accepted = known.isEmpty ? "\(method.rawValue) takes no params" : "\(method.rawValue) takes \(known.joined(separator: ", "))"
                throw RPCError(code: RPCError.invalidParams, message: "Invalid params: unknown param '\(unknown)' (\(accepted))")
            }
            value = request.params
        default:
            throw RPCError(code: RPCError.invalidParams, message: "Invalid params: " + Self.positionalProblem(method))
        }
    }

    private static func positionalProblem(_ method: RPCMethod) -> String {
        switch method.paramNames {
        case nil: "\(method.rawValue) takes named params (an object such as {\"inner\": 5}), not an array"
        case let names? where names.isEmpty: "\(method.rawValue) takes no params (send none, {} or [])"
        case let names?: "\(method.rawValue) takes named params (an object with \(names.joined(separator: ", "))), not an array"
        }
    }

    func string(_ key: String) throws -> String {
        guard case .string(let s) = value[key] else { throw invalid(key, value[key] == .undefined ? "is required" : "must be a string") }
        return s
    }

    func array(_ key: String) throws -> [MacroValue]? {
        switch value[key] {
        case .undefined, .null: return nil
        case .array(let items): return items
        default: throw invalid(key, "must be an array")
        }
    }

    func timeLimit() throws -> Duration? {
        switch value["timeoutMs"] {
        case .undefined, .null: return nil
        case .number(let n) where n.rounded() == n && n >= 1 && n <= 86_400_000: return .milliseconds(Int64(n))
        default: throw invalid("timeoutMs", "must be a whole number of milliseconds from 1 to 86400000")
        }
    }

    /// The `name` param: a macro name (an identifier: no path separators, not a keyword).
    func macroName() throws -> String {
        let name = try string("name")
        if let reason = MacroName.shadowingReason(name) { throw invalid("name", "not a valid macro name: " + reason) }
        guard MacroName.isIdentifier(name) else {
            throw invalid("name", "'\(name)' is not a valid macro name (letters, digits, _ or $; no path separators)")
        }
        return name
    }

    /// The `name` param for a method that runs or writes the macro: also not an engine global
    /// (`Math`, `progress`, ...), which no macro file can ever replace.
    func macroName(in engine: MacroEngine) throws -> String {
        let name = try macroName()
        if try engine.isEngineGlobal(name) {
            throw invalid("name", "'\(name)' is not a valid macro name: it is an engine global")
        }
        return name
    }

    func events() throws -> [EventKind] {
        guard case .array(let items) = value["events"] else { throw invalid("events", "must be an array such as [\"progress\"]") }
        return try items.map { item in
            guard let name = item.stringValue, let kind = EventKind(rawValue: name) else {
                throw invalid("events", "unknown event \(item.jsonText()) (events: progress, macros, log, runs)")
            }
            return kind
        }
    }

    func invalid(_ key: String, _ problem: String) -> RPCError {
        RPCError(code: RPCError.invalidParams, message: "Invalid params: \(key) \(problem)")
    }
}
