import Foundation
import MacroBase
import OrderedCollections

private typealias OrderedFields = OrderedDictionary<String, MacroValue>

/// What one run of a macro did, whatever started it (a call, a trigger, the dashboard, the
/// CLI): its arguments, its result or its error with the stop location, its console lines, the
/// changes it made to the rings and its store (those rolled back too, marked so), the values
/// before it (what a replay starts from) and its timings. Kept by ``RunLog``.
public struct RunRecord: Sendable {
    /// The run's id: unique across restarts of macrod (while records are kept).
    public var id: Int
    /// The call id it ran as (`macro.running`, `macro.cancel`, console lines); a new process counts calls from 1 again.
    public var call: Int
    /// The macro.
    public var macro: String
    /// The version of its file that ran: FNV-1a 64 of the loaded content, in hex (``CodeOwner/hash``).
    public var version: String?
    /// Who or what started it: `socket`, `dashboard`, `cli`, `trigger:every`, ...
    public var origin: String
    /// When it started (seconds since 1970).
    public var startedAt: Double
    /// Its arguments.
    public var arguments: [MacroValue]
    /// Its result (nil while running, or when it failed).
    public var result: MacroValue?
    /// Its error, when it failed.
    public var error: MacroError?
    /// Its console lines, in order (at most ``RunLog/consoleLines``; later ones are counted).
    public var console: [ConsoleLine] = []
    /// Console lines past the kept ones.
    public var consoleDropped = 0
    /// Changes of a ring by its turns, in order; `kept` false: rolled back with its turn.
    public var changes: [Change] = []
    /// Changes of its store by its turns, in order (`from`/`to` are JSON text, nil: not set).
    public var storeChanges: [StoreEdit] = []
    /// The rings' committed values when it started, by channel.
    public var valuesBefore: [String: Double] {
        Dictionary(zip(channels, values), uniquingKeysWith: { $1 })
    }
    /// The channels' names and their values when it started, in channel order (kept as two
    /// arrays: the names are shared by every record).
    var channels: [String]
    var values: [Double]
    /// Its store when it started (key: JSON text); nil when the store was larger than
    /// ``RunLog/storeSnapshotBytes`` (a replay then starts from the store as it is).
    public var storeBefore: [String: String]?
    /// Its turns: when each began (ms after the start) and how long it ran in JavaScript.
    public var turns: [Turn] = []
    /// Turns past the kept ones.
    public var turnsDropped = 0
    /// Milliseconds from start to end (nil while running).
    public var totalMs: Double?
    /// Milliseconds spent in JavaScript (all turns).
    public var javascriptMs: Double = 0
    /// Roughly how many bytes the record holds (for the log's bound).
    public var bytes = 256

    /// A console line (a nominal type, not a tuple: no type metadata is looked up per record).
    public struct ConsoleLine: Sendable, Equatable {
        /// `log`, `info`, `warn`, `error` or `debug`.
        public var level: String
        /// The line.
        public var message: String
    }

    /// A turn: when it began (ms after the run's start) and how long it ran in JavaScript.
    public struct Turn: Sendable, Equatable {
        /// Milliseconds after the run's start.
        public var atMs: Double
        /// Milliseconds in JavaScript.
        public var ms: Double
    }

    /// One change of a ring.
    public struct Change: Sendable, Equatable {
        /// The channel.
        public var channel: String
        /// Its value before the turn and after it (or what the turn tried, when rolled back).
        public var from: Double
        /// The value after.
        public var to: Double
        /// False: the turn failed and the change was rolled back.
        public var kept: Bool
    }

    /// One change of the store.
    public struct StoreEdit: Sendable, Equatable {
        /// The key.
        public var key: String
        /// Its JSON text before and after (nil: not set).
        public var from: String?
        /// The JSON text after.
        public var to: String?
        /// False: rolled back with its turn.
        public var kept: Bool
    }

    /// Whether it failed.
    public var failed: Bool { error != nil }
    /// Whether it has ended.
    public var ended: Bool { totalMs != nil }

    /// The one-line summary `run.list` gives.
    public var summary: MacroValue {
        var fields: OrderedFields = [
            "id": .number(Double(id)), "call": .number(Double(call)), "macro": .string(macro), "origin": .string(origin),
            "started": .string(Self.iso(startedAt)), "ok": ended ? .bool(!failed) : .null,
            "ms": totalMs.map { .number(Self.rounded($0)) } ?? .null,
        ]
        if let error { fields["error"] = .string(error.headline) }
        return .object(fields)
    }

    /// The whole record, as `run.get` and the JSON-lines export give it.
    public var json: MacroValue {
        var fields: OrderedFields = [
            "id": .number(Double(id)), "call": .number(Double(call)), "macro": .string(macro), "version": version.map { .string($0) } ?? .null,
            "origin": .string(origin), "started": .string(Self.iso(startedAt)), "arguments": .array(arguments),
        ]
        if let error {
            var described: OrderedFields = ["code": .string("\(error.code)"), "message": .string(error.message)]
            if let name = error.errorName { described["name"] = .string(name) }
            if let file = error.file { described["file"] = .string(file) }
            if let line = error.line { described["line"] = .number(Double(line)) }
            if let column = error.column { described["column"] = .number(Double(column)) }
            if let location = error.location { described["location"] = .string(location) }
            if let stack = error.stack { described["stack"] = .string(stack) }
            fields["error"] = .object(described)
        } else {
            fields["result"] = result ?? .null
        }
        fields["console"] = .array(console.map { ["level": .string($0.level), "message": .string($0.message)] })
        if consoleDropped > 0 { fields["consoleDropped"] = .number(Double(consoleDropped)) }
        fields["changes"] = .array(
            changes.map { ["channel": .string($0.channel), "from": .number($0.from), "to": .number($0.to), "kept": .bool($0.kept)] })
        fields["storeChanges"] = .array(
            storeChanges.map { edit in
                ["key": .string(edit.key), "from": Self.value(edit.from), "to": Self.value(edit.to), "kept": .bool(edit.kept)]
            })
        fields["valuesBefore"] = .object(OrderedFields(zip(channels, values).map { ($0, .number($1)) }, uniquingKeysWith: { $1 }))
        fields["storeBefore"] =
            storeBefore.map { entries in
                .object(OrderedFields(uniqueKeysWithValues: entries.sorted { $0.key < $1.key }.map { ($0.key, Self.value($0.value)) }))
            } ?? .null
        var timings: OrderedFields = [
            "totalMs": totalMs.map { .number(Self.rounded($0)) } ?? .null, "javascriptMs": .number(Self.rounded(javascriptMs)),
            "turns": .array(turns.map { ["atMs": .number(Self.rounded($0.atMs)), "ms": .number(Self.rounded($0.ms))] }),
        ]
        if turnsDropped > 0 { timings["turnsDropped"] = .number(Double(turnsDropped)) }
        fields["timings"] = .object(timings)
        return .object(fields)
    }

    /// A record read back from ``json`` (the runs file); nil when a required field is missing.
    public init?(json: MacroValue) {
        // An id past 2^53 is not one macrod gave (nor one JSON keeps exactly); counting on from
        // it would overflow.
        guard let id = json["id"].intValue, id >= 1, id <= 1 << 53, let macro = json["macro"].stringValue, let origin = json["origin"].stringValue,
            let started = json["started"].stringValue.flatMap(Self.date)
        else { return nil }
        self.init(
            id: id, call: json["call"].intValue ?? id, macro: macro, version: json["version"].stringValue, origin: origin, startedAt: started,
            arguments: json["arguments"].arrayValue ?? [], channels: [], values: [])
        if case .object(let error) = json["error"] {
            self.error = MacroError(
                code: Self.code(error["code"]?.stringValue), message: error["message"]?.stringValue ?? "", errorName: error["name"]?.stringValue, macro: macro,
                file: error["file"]?.stringValue, line: error["line"]?.intValue, column: error["column"]?.intValue, stack: error["stack"]?.stringValue)
        } else {
            result = json["result"]
        }
        console = (json["console"].arrayValue ?? []).map { ConsoleLine(level: $0["level"].stringValue ?? "log", message: $0["message"].stringValue ?? "") }
        consoleDropped = json["consoleDropped"].intValue ?? 0
        changes = (json["changes"].arrayValue ?? []).compactMap { c in
            guard let channel = c["channel"].stringValue, let from = c["from"].doubleValue, let to = c["to"].doubleValue else { return nil }
            return Change(channel: channel, from: from, to: to, kept: c["kept"].boolValue ?? true)
        }
        storeChanges = (json["storeChanges"].arrayValue ?? []).compactMap { c in
            guard let key = c["key"].stringValue else { return nil }
            return StoreEdit(key: key, from: Self.text(c["from"]), to: Self.text(c["to"]), kept: c["kept"].boolValue ?? true)
        }
        let before = (json["valuesBefore"].objectValue ?? [:]).compactMap { key, value in value.doubleValue.map { (key, $0) } }
        channels = before.map(\.0)
        values = before.map(\.1)
        storeBefore = json["storeBefore"].objectValue.map { entries in
            Dictionary(entries.map { ($0.key, $0.value.jsonText()) }, uniquingKeysWith: { $1 })
        }
        let timings = json["timings"]
        totalMs = timings["totalMs"].doubleValue
        javascriptMs = timings["javascriptMs"].doubleValue ?? 0
        turns = (timings["turns"].arrayValue ?? []).map { Turn(atMs: $0["atMs"].doubleValue ?? 0, ms: $0["ms"].doubleValue ?? 0) }
        turnsDropped = timings["turnsDropped"].intValue ?? 0
        bytes = json.jsonText().utf8.count
    }

    /// A record of a run starting now.
    init(
        id: Int, call: Int, macro: String, version: String?, origin: String, startedAt: Double, arguments: [MacroValue], channels: [String],
        values: [Double], storeBefore: [String: String]? = nil
    ) {
        self.id = id
        self.call = call
        self.macro = macro
        self.version = version
        self.origin = origin
        self.startedAt = startedAt
        self.arguments = arguments
        self.channels = channels
        self.values = values
        self.storeBefore = storeBefore
    }

    private static func value(_ json: String?) -> MacroValue {
        guard let json else { return .undefined }
        return (try? MacroValue(jsonText: json)) ?? .string(json)
    }

    private static func text(_ value: MacroValue) -> String? {
        value == .undefined ? nil : value.jsonText()
    }

    static func rounded(_ ms: Double) -> Double { (ms * 1000).rounded() / 1000 }

    private static func code(_ name: String?) -> MacroError.Code {
        let codes: [MacroError.Code] = [
            .threw, .timeout, .syntax, .notAFunction, .noSuchMacro, .invalidName, .conversion, .io, .invalidArgument, .cancelled, .memoryLimit, .quarantined, .paused,
        ]
        return codes.first { "\($0)" == name } ?? .threw
    }

    /// ISO 8601 with milliseconds, UTC.
    static func iso(_ seconds: Double) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: Date(timeIntervalSince1970: seconds))
    }

    private static func date(_ text: String) -> Double? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.date(from: text)?.timeIntervalSince1970
    }
}
