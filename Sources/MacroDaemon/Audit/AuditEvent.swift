import Foundation
import MacroBase
import MacroRPC

/// One change the audit log records: when, who, what, and the version hashes where they apply.
package struct AuditEvent: Sendable, Equatable {
    /// What kind of change it was.
    package enum Kind: String, Sendable, CaseIterable {
        /// A new version of a macro or lib file went live (`before`/`after`: its hashes).
        case save
        /// A kept version was written back and went live (`macro.rollback`).
        case rollback
        /// A macro or lib file was deleted (`before`: the hash of its last version).
        case delete
        /// A file was quarantined after its code stalled the engine.
        case quarantine
        /// A quarantine was lifted (`macro.unquarantine`).
        case unquarantine
        /// The config file was read again (SIGHUP).
        case configReload
        /// The progress values were set from outside (`progress.set`).
        case progressSet
        /// A macro's store was edited from outside (not by the macro's own code).
        case storeEdit
    }

    /// Its number: one more than the event before it, across restarts.
    package var seq: Int
    /// When it happened (seconds since 1970).
    package var time: Double
    /// What kind of change.
    package var kind: Kind
    /// Who made it.
    package var actor: AuditActor
    /// The macro or lib file (`lib/NAME`) it concerns, if one.
    package var name: String?
    /// The hash of the file's content before the change.
    package var before: String?
    /// The hash after it.
    package var after: String?
    /// The history's number of the version that went live (a save, a rollback).
    package var version: Int?
    /// What else there is to say (the values of a `progress.set`, the version a rollback restored,
    /// a quarantine's reason), as a JSON object.
    package var details: MacroValue?

    package init(
        seq: Int = 0, time: Double = 0, kind: Kind, actor: AuditActor, name: String? = nil, before: String? = nil, after: String? = nil,
        version: Int? = nil, details: MacroValue? = nil
    ) {
        self.seq = seq
        self.time = time
        self.kind = kind
        self.actor = actor
        self.name = name
        self.before = before
        self.after = after
        self.version = version
        self.details = details
    }

    /// As JSON (one line of the log, an element of `audit.recent`):
    /// `{seq, time, kind, who, name?, before?, after?, version?, details?}`, `time` in ISO 8601
    /// UTC with milliseconds.
    package var json: MacroValue {
        var fields: OrderedFields = [
            "seq": .number(Double(seq)), "time": .string(Self.iso8601(time)), "kind": .string(kind.rawValue), "who": actor.json,
        ]
        if let name { fields["name"] = .string(name) }
        if let before { fields["before"] = .string(before) }
        if let after { fields["after"] = .string(after) }
        if let version { fields["version"] = .number(Double(version)) }
        if let details { fields["details"] = details }
        return .object(fields)
    }

    /// Read back from ``json``; nil when it is not one.
    init?(json: MacroValue) {
        guard let seq = json["seq"].intValue, seq >= 1, seq <= 1 << 53, let text = json["time"].stringValue, let time = Self.parseISO8601(text),
            let kindName = json["kind"].stringValue, let kind = Kind(rawValue: kindName), let actor = AuditActor(json: json["who"])
        else { return nil }
        self.init(
            seq: seq, time: time, kind: kind, actor: actor, name: json["name"].stringValue, before: json["before"].stringValue,
            after: json["after"].stringValue, version: json["version"].intValue, details: json["details"] == .undefined ? nil : json["details"])
    }

    /// The longest string of ``details`` kept whole, in UTF-8 bytes: past it the start is kept
    /// and a marker says how long the whole was (`…[cut: 1024000 bytes]`).
    package static let detailStringLimit = 200
    /// The most elements of an array, or fields of an object, ``details`` keeps (deeper than
    /// four levels a value is replaced by a marker).
    package static let detailItemLimit = 32
    /// The largest line an event writes, in bytes: past it (strings cut already) its details are
    /// replaced by `{"cut": "details of N bytes not kept"}`. The audit log records who changed
    /// what, never the values themselves.
    package static let lineLimit = 4096

    /// This event with its details bounded (``detailStringLimit``, ``detailItemLimit``,
    /// ``lineLimit``): what the log writes and keeps.
    package var bounded: AuditEvent {
        guard let details else { return self }
        var event = self
        event.details = Self.bound(details, depth: 0)
        let size = event.json.jsonText(pretty: false).utf8.count
        if size > Self.lineLimit {
            let whole = details.jsonText(pretty: false).utf8.count
            event.details = ["cut": .string("details of \(whole) bytes not kept")]
        }
        return event
    }

    /// `value` with long strings cut and long arrays and objects shortened, each with a marker.
    private static func bound(_ value: MacroValue, depth: Int) -> MacroValue {
        switch value {
        case .string(let text): return .string(cut(text))
        case .array(let items):
            guard depth < 4 else { return .string("…[cut: an array of \(items.count) elements]") }
            var kept = items.prefix(detailItemLimit).map { bound($0, depth: depth + 1) }
            if items.count > detailItemLimit { kept.append(.string("…[cut: \(items.count - detailItemLimit) more elements]")) }
            return .array(kept)
        case .object(let fields):
            guard depth < 4 else { return .string("…[cut: an object of \(fields.count) fields]") }
            var kept = OrderedFields()
            for (key, item) in fields.prefix(detailItemLimit) { kept[cut(key)] = bound(item, depth: depth + 1) }
            if fields.count > detailItemLimit { kept["…"] = .string("[cut: \(fields.count - detailItemLimit) more fields]") }
            return .object(kept)
        case .error(let name, let message, _): return .string(cut("\(name): \(message)"))
        case .function: return .string("[function]")
        default: return value
        }
    }

    /// `text`, or its first ``detailStringLimit`` bytes (whole characters) and a marker.
    private static func cut(_ text: String) -> String {
        let size = text.utf8.count
        guard size > detailStringLimit else { return text }
        var kept = ""
        var used = 0
        for character in text {
            let length = character.utf8.count
            guard used + length <= detailStringLimit - 32 else { break }
            kept.append(character)
            used += length
        }
        return kept + "…[cut: \(size) bytes]"
    }

    /// `2026-11-22T07:28:02.926Z` (as the log writes its times).
    static func iso8601(_ time: Double) -> String { LogRecordFormat.timestamp(Date(timeIntervalSince1970: time)) }

    /// Reads ``iso8601(_:)``'s form back.
    static func parseISO8601(_ text: String) -> Double? {
        let digits = Array(text.utf8)
        guard digits.count == 24, digits[4] == UInt8(ascii: "-"), digits[10] == UInt8(ascii: "T"), digits[19] == UInt8(ascii: "."), digits[23] == UInt8(ascii: "Z") else {
            return nil
        }
        func number(_ range: Range<Int>) -> Int32? { Int32(String(decoding: digits[range], as: UTF8.self)) }
        guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10), let hour = number(11..<13), let minute = number(14..<16),
            let second = number(17..<19), let milliseconds = number(20..<23)
        else { return nil }
        var parts = tm()
        parts.tm_year = year - 1900
        parts.tm_mon = month - 1
        parts.tm_mday = day
        parts.tm_hour = hour
        parts.tm_min = minute
        parts.tm_sec = second
        return Double(timegm(&parts)) + Double(milliseconds) / 1000
    }
}
