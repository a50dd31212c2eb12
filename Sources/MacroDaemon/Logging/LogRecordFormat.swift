import Foundation
import Logging
import MacroEngineCore
import MacroRPC

#if canImport(Glibc)
import Glibc
#endif

/// How macrod's log records are laid out, the same for stderr, `log` notifications and
/// `log.recent`: the message first, then the metadata in a stable order (the fields that say
/// where first, then the others by name), and multi-line values such as a stack last, so a stack
/// never splits a record in the middle.
package enum LogRecordFormat {
    /// Keys that come first, in this order; the rest follow by name, `stack` last.
    static let leadingKeys = ["macro", "lib", "call", "code", "error.name", "file", "line", "column"]

    /// The metadata as `(key, value)` pairs in the stable order.
    package static func ordered(_ metadata: Logger.Metadata) -> [(key: String, value: String)] {
        let pairs = metadata.map { (key: $0.key, value: "\($0.value)") }
        return pairs.sorted { a, b in
            let (rankA, rankB) = (rank(a), rank(b))
            return rankA != rankB ? rankA < rankB : a.key < b.key
        }
    }

    /// 0...n-1 for the leading keys, n for one-line values, n+1 for multi-line ones, n+2 for `stack`.
    private static func rank(_ pair: (key: String, value: String)) -> Int {
        if let index = leadingKeys.firstIndex(of: pair.key) { return index }
        if pair.key == "stack" { return leadingKeys.count + 2 }
        return pair.value.contains("\n") ? leadingKeys.count + 1 : leadingKeys.count
    }

    /// The current time as ISO 8601 in UTC with milliseconds: `2026-11-22T07:14:22.123Z`.
    package static func timestamp(_ date: Date = Date()) -> String {
        let milliseconds = Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
        var seconds = time_t(milliseconds / 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func pad(_ value: Int32, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return "\(pad(parts.tm_year + 1900, 4))-\(pad(parts.tm_mon + 1, 2))-\(pad(parts.tm_mday, 2))T"
            + "\(pad(parts.tm_hour, 2)):\(pad(parts.tm_min, 2)):\(pad(parts.tm_sec, 2)).\(pad(Int32(milliseconds % 1000), 3))Z"
    }

    /// One record as text: `TIME LEVEL LABEL: MESSAGE key=value ...` on the first line; the
    /// further lines of a multi-line message, then each multi-line value (`key:` and its lines),
    /// follow indented, so every record starts at column 0 with its time and nothing splits it.
    package static func line(time: String, level: Logger.Level, label: String, message: String, metadata: Logger.Metadata) -> String {
        let messageLines = message.split(separator: "\n", omittingEmptySubsequences: false)
        var head = "\(time) \(level) \(label): \(messageLines.first ?? "")"
        var tail = messageLines.dropFirst().map { "\n    \($0)" }.joined()
        for (key, value) in ordered(metadata) {
            if value.contains("\n") {
                tail += "\n    \(key):" + value.split(separator: "\n", omittingEmptySubsequences: false).map { "\n      \($0)" }.joined()
            } else {
                head += " \(key)=\(value)"
            }
        }
        return head + tail + "\n"
    }

    /// One record as one line of JSON (`log_format: json`): `timestamp`, `level`, `message`,
    /// `macro` and `call` (the call id, a number; both null when the record has none), then the
    /// other metadata in the stable order under `metadata`. A stack stays inside its string.
    package static func jsonLine(time: String, level: Logger.Level, label: String, message: String, metadata: Logger.Metadata) -> String {
        var fields: OrderedFields = ["timestamp": .string(time), "level": .string(level.rawValue), "message": .string(message)]
        let pairs = ordered(metadata)
        fields["macro"] = pairs.first { $0.key == "macro" }.map { .string($0.value) } ?? .null
        fields["call"] = pairs.first { $0.key == "call" }.map { pair in Int(pair.value).map { .number(Double($0)) } ?? .string(pair.value) } ?? .null
        var rest = OrderedFields()
        for (key, value) in pairs where key != "macro" && key != "call" { rest[key] = .string(value) }
        fields["metadata"] = .object(rest)
        fields["logger"] = .string(label)
        return MacroValue.object(fields).jsonText() + "\n"
    }
}

/// macrod's stderr log: one record per `write(2)`, laid out by ``LogRecordFormat`` as text or
/// as one JSON object per line (`log_format`).
public struct DaemonLogHandler: LogHandler {
    /// The logger's label (`macrod`).
    public let label: String
    /// Text records or JSON lines.
    public let format: LogFormat
    /// Metadata added to every record.
    public var metadata: Logger.Metadata = [:]
    /// The lowest level written.
    public var logLevel: Logger.Level = .info

    /// A handler writing to standard error in `format`.
    public init(label: String, format: LogFormat = .text) {
        self.label = label
        self.format = format
    }

    /// Metadata for `key`.
    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// Writes one record.
    public func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:], uniquingKeysWith: { _, new in new })
        let text =
            format == .json
            ? LogRecordFormat.jsonLine(time: LogRecordFormat.timestamp(), level: event.level, label: label, message: "\(event.message)", metadata: merged)
            : LogRecordFormat.line(time: LogRecordFormat.timestamp(), level: event.level, label: label, message: "\(event.message)", metadata: merged)
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { Glibc.write(2, $0.baseAddress! + offset, $0.count - offset) }
            if written < 0 {
                if errno == EINTR { continue }
                return
            }
            offset += written
        }
    }
}
