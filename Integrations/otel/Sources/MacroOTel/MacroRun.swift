import MacroBase

/// One run record as `run.get` answers it (docs/protocol.md), the parts a span carries.
public struct MacroRun: Sendable, Equatable {
    /// How a failed run failed (`error` of the record).
    public struct Failure: Sendable, Equatable {
        /// MacroEngine's code: `threw`, `timeout`, `cancelled`, `memoryLimit`, ...
        public var code: String
        /// The JavaScript error's name (`TypeError`), when it threw one.
        public var name: String?
        /// The message.
        public var message: String
        /// The file, line and column where it stopped, when known.
        public var file: String?
        /// The line (1-based).
        public var line: Int?
        /// The column (1-based).
        public var column: Int?
        /// The JavaScript stack, when known.
        public var stack: String?
    }

    /// A `console.*` line of the run.
    public struct ConsoleLine: Sendable, Equatable {
        /// `log`, `info`, `warn`, `error` or `debug`.
        public var level: String
        /// The line as `console.log` formats it.
        public var message: String
    }

    /// A turn: when it began (ms after the start) and how long it ran in JavaScript.
    public struct Turn: Sendable, Equatable {
        /// Milliseconds after the run's start.
        public var atMs: Double
        /// Milliseconds in JavaScript.
        public var ms: Double
    }

    /// The run's id (increasing as runs end; unique across macrod's restarts while records are kept).
    public var id: Int
    /// The call id it ran as.
    public var call: Int
    /// The macro.
    public var macro: String
    /// The version of its file that ran (FNV-1a 64 of its content, hex), when known.
    public var version: String?
    /// Who started it: `socket`, `dashboard`, `trigger:every`, `call`, ...
    public var origin: String
    /// When it started.
    public var started: RecordInstant
    /// Milliseconds from its start to its end.
    public var totalMs: Double
    /// Milliseconds in JavaScript.
    public var javascriptMs: Double
    /// Its arguments.
    public var arguments: [MacroValue]
    /// Its result (null when it failed).
    public var result: MacroValue
    /// How it failed; nil for a success.
    public var failure: Failure?
    /// Its console lines, in order.
    public var console: [ConsoleLine]
    /// Console lines macrod counted but did not keep.
    public var consoleDropped: Int
    /// Changes of the rings by its turns (kept or rolled back).
    public var changes: Int
    /// Changes of its store by its turns (kept or rolled back).
    public var storeChanges: Int
    /// Its turns.
    public var turns: [Turn]
    /// Turns macrod counted but did not keep.
    public var turnsDropped: Int

    /// When it ended: its start plus ``totalMs``.
    public var ended: RecordInstant { started.adding(milliseconds: totalMs) }

    /// Reads `run.get`'s answer; a field missing or of the wrong type is an
    /// ``ExportError/Code/malformedReply`` naming it.
    public init(json: MacroValue) throws(ExportError) {
        func bad(_ field: String, _ expected: String) -> ExportError {
            let id = json["id"].intValue.map { "run \($0)" } ?? "a run"
            return ExportError(.malformedReply, "run.get answered \(id) whose \(field) is not \(expected): \(json.jsonText().prefix(200))")
        }
        guard case .object = json else { throw bad("record", "an object") }
        guard let id = json["id"].intValue, id >= 1 else { throw bad("id", "a whole number from 1") }
        guard let macro = json["macro"].stringValue else { throw bad("macro", "a string") }
        guard let origin = json["origin"].stringValue else { throw bad("origin", "a string") }
        guard let startedText = json["started"].stringValue, let started = Timestamp.parse(startedText) else {
            throw bad("started", "an ISO 8601 time")
        }
        let timings = json["timings"]
        guard let totalMs = timings["totalMs"].doubleValue, totalMs >= 0 else { throw bad("timings.totalMs", "a number from 0 (the run has not ended?)") }
        self.id = id
        self.call = json["call"].intValue ?? 0
        self.macro = macro
        self.version = json["version"].stringValue
        self.origin = origin
        self.started = started
        self.totalMs = totalMs
        self.javascriptMs = timings["javascriptMs"].doubleValue ?? 0
        self.arguments = json["arguments"].arrayValue ?? []
        self.result = json["result"] == .undefined ? .null : json["result"]
        let error = json["error"]
        if error.isNullish {
            failure = nil
        } else {
            guard let code = error["code"].stringValue, let message = error["message"].stringValue else {
                throw bad("error", "an object with a code and a message")
            }
            failure = Failure(
                code: code, name: error["name"].stringValue, message: message, file: error["file"].stringValue, line: error["line"].intValue,
                column: error["column"].intValue, stack: error["stack"].stringValue)
        }
        var console: [ConsoleLine] = []
        for line in json["console"].arrayValue ?? [] {
            guard let level = line["level"].stringValue, let message = line["message"].stringValue else {
                throw bad("console", "an array of {level, message}")
            }
            console.append(ConsoleLine(level: level, message: message))
        }
        self.console = console
        self.consoleDropped = json["consoleDropped"].intValue ?? 0
        self.changes = json["changes"].arrayValue?.count ?? 0
        self.storeChanges = json["storeChanges"].arrayValue?.count ?? 0
        self.turns = (timings["turns"].arrayValue ?? []).map { Turn(atMs: $0["atMs"].doubleValue ?? 0, ms: $0["ms"].doubleValue ?? 0) }
        self.turnsDropped = timings["turnsDropped"].intValue ?? 0
    }
}
