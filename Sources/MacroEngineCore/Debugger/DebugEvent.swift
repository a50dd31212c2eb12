/// What a debug session tells its client.
public enum DebugEvent: Sendable {
    /// The macro stopped: `reason` (`entry`, `breakpoint`, `step`, `pause`, `exception`), the
    /// frame's `file`, `line`, `column` (1-based, the user's file), `name` (the function), and
    /// `hitBreakpointIds` or `description`/`text` (an exception) when they apply.
    case stopped(MacroValue)
    /// Output: the macro's console, a logpoint's message.
    case output(DebugOutput)
    /// The session ended.
    case terminated(DebugOutcome)
}

/// One piece of output.
public struct DebugOutput: Sendable, Equatable {
    /// `stdout` (console.log, info, debug), `stderr` (warn, error) or `console` (a logpoint).
    public var category: String
    /// The text, ending in a newline.
    public var text: String
    /// Where a logpoint is.
    public var file: String?
    /// A logpoint's 1-based line.
    public var line: Int?
    /// A logpoint's 1-based column.
    public var column: Int?

    /// Creates output.
    public init(category: String, text: String, file: String? = nil, line: Int? = nil, column: Int? = nil) {
        self.category = category
        self.text = text
        self.file = file
        self.line = line
        self.column = column
    }
}

/// How a session's macro ended, and what it would have changed.
public struct DebugOutcome: Sendable {
    /// A channel the session changed (in its copy; the live values never move).
    public struct Change: Sendable, Equatable {
        /// The channel, its value at launch and at the end.
        public var channel: String
        /// Its value at launch.
        public var from: Double
        /// Its value at the end.
        public var to: Double

        /// Creates a change.
        public init(channel: String, from: Double, to: Double) {
            self.channel = channel
            self.from = from
            self.to = to
        }
    }

    /// The macro's result, when it returned.
    public var result: MacroValue?
    /// Its error, when it threw or was stopped (a terminate: `.cancelled`).
    public var error: MacroError?
    /// The session's copy of the progress values at the end.
    public var values: [(channel: String, value: Double)]
    /// What differs from the values at launch.
    public var changes: [Change]

    /// Creates an outcome.
    public init(result: MacroValue? = nil, error: MacroError? = nil, values: [(channel: String, value: Double)], changes: [Change]) {
        self.result = result
        self.error = error
        self.values = values
        self.changes = changes
    }

    /// As JSON: `{result | error: {code, message, line, column}, values, changes: [{channel, from, to}]}`.
    public var json: MacroValue {
        var object: MacroValue = [
            "values": .object(.init(uniqueKeysWithValues: values.map { ($0.channel, MacroValue.number($0.value)) })),
            "changes": .array(changes.map { ["channel": .string($0.channel), "from": .number($0.from), "to": .number($0.to)] }),
        ]
        if let result { object = object.setting("result", result) }
        if let error {
            var e: MacroValue = ["code": .string("\(error.code)"), "message": .string(error.message)]
            if let line = error.line { e = e.setting("line", .number(Double(line))) }
            if let column = error.column { e = e.setting("column", .number(Double(column))) }
            object = object.setting("error", e)
        }
        return object
    }
}
