import MacroBase
import OrderedCollections

/// A JSON-RPC 2.0 error object: `{code, message, data?}`.
public struct RPCError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The error code (see the static members for MacroEngine's).
    public var code: Int
    /// A short description.
    public var message: String
    /// Structured detail (for -32000: name, message, file, line, column, stack).
    public var data: MacroValue?

    /// Creates an error.
    public init(code: Int, message: String, data: MacroValue? = nil) {
        self.code = code
        self.message = message
        self.data = data
    }

    /// -32700: the line is not valid JSON (or not UTF-8, or nested too deeply).
    public static let parseError = -32700
    /// -32600: valid JSON but not a JSON-RPC 2.0 request.
    public static let invalidRequest = -32600
    /// -32601: no such method.
    public static let methodNotFound = -32601
    /// -32602: the params are missing, of the wrong type, or out of range.
    public static let invalidParams = -32602
    /// -32603: a bug or an I/O failure in the daemon.
    public static let internalError = -32603
    /// -32000: the macro threw (or rejected).
    public static let macroThrew = -32000
    /// -32001: the call ran past its time limit.
    public static let timeout = -32001
    /// -32002: no such macro.
    public static let noSuchMacro = -32002
    /// -32003: the source does not parse (or is not one function expression).
    public static let syntaxError = -32003
    /// -32004: refused by configuration (engine.eval disabled, uid not allowed).
    public static let forbidden = -32004
    /// -32005: the daemon's queue is full; try again.
    public static let busy = -32005
    /// -32006: the engine was restarted (a macro kept it busy past its deadline plus
    /// `stall_grace_ms`) while this request was in flight; it did not complete, and nothing of
    /// it was kept. Sending it again is safe.
    public static let engineRestarted = -32006
    /// The macro is quarantined: its code stalled the engine; `data` names it, the stalls, and how
    /// to lift the quarantine (save a new version, or `macro.unquarantine`).
    public static let quarantined = -32007
    /// JavaScript is paused: the engine stalled more than its restart budget allows in code no
    /// file answers for; `engine.resume` (`macro resume`) runs it again.
    public static let paused = -32008
    /// A debug session failed (`debug.*`); `data.kind` names how.
    public static let debugFailed = -32020

    /// The JSON object.
    public var json: MacroValue {
        var object: MacroValue = ["code": .number(Double(code)), "message": .string(message)]
        if let data, case .object(var fields) = object {
            fields["data"] = data
            object = .object(fields)
        }
        return object
    }

    /// Reads an error object.
    public init?(json: MacroValue) {
        guard let code = json["code"].intValue, let message = json["message"].stringValue else { return nil }
        // Spelled out: in `cond ? nil : value` the nil would be MacroValue's nil literal,
        // `.undefined`, and an absent `data` would read as `.some(.undefined)`.
        var data: MacroValue? = nil
        if json["data"] != .undefined { data = json["data"] }
        self.init(code: code, message: message, data: data)
    }

    /// `message (code)`.
    public var description: String { "\(message) (\(code))" }

    /// The RPC form of an engine error: -32001 for timeouts, -32002 for missing macros, -32003
    /// for sources that do not load, -32000 otherwise, with the error's fields as `data`.
    public init(_ error: MacroError) {
        var data = OrderedFields()
        if let macro = error.macro { data["name"] = .string(macro) }
        data["message"] = .string(error.message)
        if let name = error.errorName { data["errorName"] = .string(name) }
        if let file = error.file { data["file"] = .string(file) }
        if let line = error.line { data["line"] = .number(Double(line)) }
        if let column = error.column { data["column"] = .number(Double(column)) }
        if let stack = error.stack { data["stack"] = .string(stack) }
        switch error.code {
        case .timeout:
            data["reason"] = "timeout"
            self.init(code: Self.timeout, message: error.message, data: .object(data))
        case .cancelled:
            data["reason"] = "cancelled"
            self.init(code: Self.timeout, message: error.message, data: .object(data))
        case .noSuchMacro: self.init(code: Self.noSuchMacro, message: error.message, data: .object(data))
        case .quarantined: self.init(code: Self.quarantined, message: error.message, data: .object(data))
        case .paused: self.init(code: Self.paused, message: error.message, data: .object(data))
        case .syntax, .notAFunction, .invalidName:
            self.init(code: Self.syntaxError, message: error.headline, data: .object(data))
        case .io where error.line != nil:  // a file that is not UTF-8
            self.init(code: Self.syntaxError, message: error.headline, data: .object(data))
        case .invalidArgument where error.errorName == nil:
            self.init(code: Self.invalidParams, message: error.message, data: .object(data))
        default: self.init(code: Self.macroThrew, message: error.headline, data: .object(data))
        }
    }
}

/// Object fields in insertion order.
public typealias OrderedFields = OrderedDictionary<String, MacroValue>
