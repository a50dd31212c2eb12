import Foundation

/// What makes a macro run by itself, read from its file without running it:
/// `export const triggers = [...]` and `export const mode = ...` (literals only).
public struct TriggerDeclaration: Sendable, Equatable {
    /// One trigger.
    public struct Trigger: Sendable, Equatable {
        /// What fires it.
        public enum Kind: Sendable, Equatable {
            /// Every `interval`.
            case every(Duration)
            /// At each minute `schedule` matches, in `timeZone`.
            case cron(CronSchedule, timeZone: TimeZone)
            /// A change of progress channel `channel` (committed), when the new value passes the
            /// optional thresholds; with `debounce`, the last change of a burst, once it is quiet.
            case watch(channel: String, above: Double?, below: Double?, debounce: Duration?)
            /// When the engine starts (the daemon, or a stall restart).
            case start
            /// After a reload of a module the macro imports.
            case reload
        }

        /// What fires it.
        public var kind: Kind
        /// For schedules: after downtime, run once for what was missed (`once`) or not (`skip`).
        public var runMissed: Bool
        /// The declaration as written, for display.
        public var spec: MacroValue

        /// `every`, `cron`, `watch`, `start` or `reload`.
        public var kindName: String {
            switch kind {
            case .every: "every"
            case .cron: "cron"
            case .watch: "watch"
            case .start: "start"
            case .reload: "reload"
            }
        }
    }

    /// What happens when a trigger fires while the macro's previous triggered run is going.
    public enum Mode: Sendable, Equatable {
        /// Drop the new run (and count it).
        case single
        /// Cancel the running one and start again.
        case restart
        /// Wait, at most `max` waiting.
        case queued(max: Int)
        /// Run alongside, at most `max` at once.
        case parallel(max: Int)

        /// `single`, `restart`, `queued` or `parallel`.
        public var name: String {
            switch self {
            case .single: "single"
            case .restart: "restart"
            case .queued: "queued"
            case .parallel: "parallel"
            }
        }

        /// The bound, for queued and parallel.
        public var max: Int? {
            switch self {
            case .queued(let max), .parallel(let max): max
            default: nil
            }
        }
    }

    /// The triggers, in declaration order.
    public var triggers: [Trigger]
    /// The run mode.
    public var mode: Mode

    /// The longest queue or parallel count a mode may ask for.
    public static let maximumBound = 1000

    /// Reads the two literals (either may be absent); throws `.syntax` at `line:column` of the
    /// declaration, naming the bad entry. `channels` are the progress model's channel names.
    public static func read(
        triggers: MacroValue?, mode: MacroValue?, channels: [String], file: String, macro: String, at position: (line: Int, column: Int)
    ) throws -> TriggerDeclaration {
        func fail(_ message: String) -> MacroError {
            MacroError(code: .syntax, message: message, macro: macro, file: file, line: position.line, column: position.column)
        }
        var list: [Trigger] = []
        if let triggers {
            guard case .array(let items) = triggers else { throw fail("`export const triggers` must be an array of triggers, such as [{ every: \"5s\" }]") }
            for (index, item) in items.enumerated() {
                do {
                    list.append(try trigger(item, channels: channels))
                } catch let error as CronError {
                    throw fail("triggers[\(index)]: \(error.description)")
                }
            }
        }
        return TriggerDeclaration(triggers: list, mode: try readMode(mode, fail: fail))
    }

    private static func readMode(_ value: MacroValue?, fail: (String) -> MacroError) throws -> Mode {
        guard let value else { return .single }
        let name: String, bound: MacroValue
        switch value {
        case .string(let text): (name, bound) = (text, .null)
        case .object(let fields):
            for key in fields.keys where key != "mode" && key != "max" { throw fail("mode: unknown key '\(key)' (use mode and max)") }
            guard let text = fields["mode"]?.stringValue else { throw fail("mode: { mode: \"queued\", max: 10 } needs a mode") }
            (name, bound) = (text, fields["max"] ?? .null)
        default: throw fail("`export const mode` is \"single\", \"restart\", \"queued\" or \"parallel\", or { mode, max }")
        }
        var max = 10
        if bound != .null {
            guard let number = bound.doubleValue, number == number.rounded(), number >= 1, number <= Double(maximumBound) else {
                throw fail("mode: max must be a whole number from 1 to \(maximumBound)")
            }
            max = Int(number)
        }
        switch name {
        case "single": return .single
        case "restart": return .restart
        case "queued": return .queued(max: max)
        case "parallel": return .parallel(max: max)
        default: throw fail("mode '\(name)' is not one of single, restart, queued, parallel")
        }
    }

    private static func trigger(_ item: MacroValue, channels: [String]) throws -> Trigger {
        guard case .object(let fields) = item else { throw CronError("a trigger is an object, such as { every: \"5s\" }") }
        let kinds = ["every", "cron", "watch", "on"].filter { fields[$0] != nil }
        guard kinds.count == 1, let kind = kinds.first else {
            throw CronError(
                kinds.isEmpty ? "a trigger has one of every, cron, watch or on" : "a trigger has one of every, cron, watch or on, not \(kinds.joined(separator: " and "))")
        }
        let allowed: Set<String> =
            switch kind {
            case "every": ["every", "missed"]
            case "cron": ["cron", "tz", "missed"]
            case "watch": ["watch", "above", "below", "debounce"]
            default: ["on"]
            }
        for key in fields.keys.sorted() where !allowed.contains(key) {
            throw CronError("unknown key '\(key)' in a \(kind) trigger (it takes \(allowed.sorted().joined(separator: ", ")))")
        }
        var runMissed = false
        if let missed = fields["missed"] {
            guard let text = missed.stringValue, text == "skip" || text == "once" else { throw CronError("missed is \"skip\" or \"once\"") }
            runMissed = text == "once"
        }
        switch kind {
        case "every":
            guard let text = fields["every"]?.stringValue, let interval = parseDuration(text) else {
                throw CronError("every takes a number with a unit: \"250ms\", \"5s\", \"2min\"")
            }
            guard interval >= .milliseconds(10) else { throw CronError("every \"\(text)\" is shorter than the shortest interval, 10ms") }
            return Trigger(kind: .every(interval), runMissed: runMissed, spec: item)
        case "cron":
            guard let text = fields["cron"]?.stringValue else { throw CronError("cron takes a 5-field expression, such as \"*/5 * * * *\"") }
            let schedule = try CronSchedule(text)
            var zone = TimeZone.current
            if let name = fields["tz"] {
                guard let text = name.stringValue, let found = TimeZone(identifier: text) else {
                    throw CronError("tz \(name.jsonText(pretty: false)) is not a time zone, such as \"Europe/Paris\"")
                }
                zone = found
            }
            return Trigger(kind: .cron(schedule, timeZone: zone), runMissed: runMissed, spec: item)
        case "watch":
            guard let channel = fields["watch"]?.stringValue, channels.contains(channel) else {
                throw CronError("watch names a progress channel: \(channels.joined(separator: ", "))")
            }
            func number(_ key: String) throws -> Double? {
                guard let value = fields[key] else { return nil }
                guard let number = value.doubleValue, number.isFinite else { throw CronError("\(key) is a number") }
                return number
            }
            var debounce: Duration?
            if let value = fields["debounce"] {
                guard let text = value.stringValue, let parsed = parseDuration(text) else { throw CronError("debounce takes a number with a unit: \"250ms\"") }
                debounce = parsed
            }
            return Trigger(kind: .watch(channel: channel, above: try number("above"), below: try number("below"), debounce: debounce), runMissed: false, spec: item)
        default:
            switch fields["on"]?.stringValue {
            case "start": return Trigger(kind: .start, runMissed: false, spec: item)
            case "reload": return Trigger(kind: .reload, runMissed: false, spec: item)
            default: throw CronError("on is \"start\" or \"reload\"")
            }
        }
    }

    /// `"250ms"`, `"5s"`, `"2min"` (and `"1h"`), nil otherwise.
    public static func parseDuration(_ text: String) -> Duration? {
        let units: [(String, Double)] = [("ms", 1e-3), ("min", 60), ("s", 1), ("h", 3600)]
        for (unit, seconds) in units where text.hasSuffix(unit) {
            let number = text.dropLast(unit.count).trimmingCharacters(in: .whitespaces)
            guard let value = Double(number), value.isFinite, value > 0 else { return nil }
            return .nanoseconds(Int64((value * seconds * 1e9).rounded()))
        }
        return nil
    }
}
