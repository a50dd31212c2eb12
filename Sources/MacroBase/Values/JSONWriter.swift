import Foundation
import OrderedCollections

/// Where the JSON writer puts its UTF-8 (see ``MacroValue/writeJSON(to:pretty:)``): a `[UInt8]`
/// here; the daemon's socket writes straight into a NIO `ByteBuffer` through its own sink.
public protocol JSONByteSink {
    /// Appends one byte.
    mutating func writeJSONByte(_ byte: UInt8)
    /// Appends bytes that are valid UTF-8 by themselves (whole characters).
    mutating func writeJSONBytes(_ bytes: UnsafeRawBufferPointer)
}

extension Array: JSONByteSink where Element == UInt8 {
    /// Appends one byte.
    @inlinable public mutating func writeJSONByte(_ byte: UInt8) { append(byte) }
    /// Appends the bytes.
    @inlinable public mutating func writeJSONBytes(_ bytes: UnsafeRawBufferPointer) { append(contentsOf: bytes) }
}

extension JSONByteSink {
    /// Appends ASCII text known at compile time (`null`, `"jsonrpc":"2.0"`, ...).
    @inlinable public mutating func writeJSONLiteral(_ literal: StaticString) {
        writeJSONBytes(UnsafeRawBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
    }

    /// Appends a string's UTF-8 as it is (no quotes, no escapes): text that is already JSON.
    @inlinable public mutating func writeJSONRaw(_ text: String) {
        var text = text
        text.withUTF8 { writeJSONBytes(UnsafeRawBufferPointer($0)) }
    }
}

extension MacroValue {
    /// Writes the JSON text of ``jsonText(pretty:)`` to `sink`, byte for byte the same, without
    /// building a `String`: numbers, escapes and structure go straight to the sink.
    @inlinable public func writeJSON<Sink: JSONByteSink>(to sink: inout Sink, pretty: Bool = false) {
        writeJSON(to: &sink, pretty: pretty, indent: 0)
    }

    /// True for what `JSON.stringify` leaves out of an object: `undefined` and functions.
    @usableFromInline var omittedInObject: Bool {
        switch self {
        case .undefined, .function: return true
        default: return false
        }
    }

    /// ``writeJSON(to:pretty:)`` at `indent` levels of nesting (for `pretty`).
    @inlinable func writeJSON<Sink: JSONByteSink>(to sink: inout Sink, pretty: Bool, indent: Int) {
        switch self {
        case .undefined, .null, .function: sink.writeJSONLiteral("null")
        case .bool(let b): sink.writeJSONLiteral(b ? "true" : "false")
        case .number(let n): MacroValue.writeJSONNumber(n, to: &sink)
        case .string(let s): MacroValue.writeJSONString(s, to: &sink)
        case .date(let d): MacroValue.writeJSONString(MacroValue.jsonDate(d), to: &sink)
        case .error(let name, let message, _):
            MacroValue.object(["name": .string(name), "message": .string(message)]).writeJSON(to: &sink, pretty: pretty, indent: indent)
        case .array(let items):
            if items.isEmpty { sink.writeJSONLiteral("[]"); return }
            sink.writeJSONByte(UInt8(ascii: "["))
            var first = true
            for item in items {
                if !first { sink.writeJSONByte(UInt8(ascii: ",")) }
                first = false
                if pretty { MacroValue.writeJSONNewline(indent: indent + 1, to: &sink) }
                item.writeJSON(to: &sink, pretty: pretty, indent: indent + 1)
            }
            if pretty { MacroValue.writeJSONNewline(indent: indent, to: &sink) }
            sink.writeJSONByte(UInt8(ascii: "]"))
        case .object(let object):
            // Members that JSON.stringify leaves out (undefined, functions) are skipped in place.
            var first = true
            for (key, value) in object where !value.omittedInObject {
                sink.writeJSONByte(first ? UInt8(ascii: "{") : UInt8(ascii: ","))
                first = false
                if pretty { MacroValue.writeJSONNewline(indent: indent + 1, to: &sink) }
                MacroValue.writeJSONString(key, to: &sink)
                if pretty { sink.writeJSONLiteral(": ") } else { sink.writeJSONByte(UInt8(ascii: ":")) }
                value.writeJSON(to: &sink, pretty: pretty, indent: indent + 1)
            }
            if first { sink.writeJSONLiteral("{}"); return }
            if pretty { MacroValue.writeJSONNewline(indent: indent, to: &sink) }
            sink.writeJSONByte(UInt8(ascii: "}"))
        }
    }

    /// A newline and `indent` levels of two spaces (pretty output).
    @inlinable static func writeJSONNewline<Sink: JSONByteSink>(indent: Int, to sink: inout Sink) {
        sink.writeJSONByte(UInt8(ascii: "\n"))
        for _ in 0..<indent { sink.writeJSONLiteral("  ") }
    }

    /// A date as JSON writes it: ISO 8601 with milliseconds, UTC.
    @usableFromInline static func jsonDate(_ date: Date) -> String {
        date.formatted(.iso8601.year().month().day().time(includingFractionalSeconds: true).timeZone(separator: .omitted))
    }

    /// Writes a number exactly as ``formatNumber(_:)`` formats it; whole numbers (nearly all)
    /// without building a string.
    @inlinable package static func writeJSONNumber<Sink: JSONByteSink>(_ n: Double, to sink: inout Sink) {
        if n == n.rounded(), abs(n) < 9.2e18 {
            // n == 0 covers -0, which JSON.stringify writes as 0.
            writeJSONInteger(Int64(n), to: &sink)
            return
        }
        writeJSONRawNumber(n, to: &sink)
    }

    /// The other numbers: fractions as `description` spells them (a small string, no heap),
    /// non-finite and huge whole numbers through ``formatNumber(_:)``.
    /// Inlinable, so a sink of another module (the socket's `ByteBuffer` sink) gets it specialised.
    @inlinable static func writeJSONRawNumber<Sink: JSONByteSink>(_ n: Double, to sink: inout Sink) {
        if n.isFinite, n != n.rounded() {
            sink.writeJSONRaw(n.description)
        } else {
            sink.writeJSONRaw(formatNumber(n))
        }
    }

    /// Writes an integer's decimal digits (and its sign).
    @inlinable package static func writeJSONInteger<Sink: JSONByteSink>(_ value: Int64, to sink: inout Sink) {
        // 20 bytes hold Int64.min's 19 digits and its sign.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var magnitude = value.magnitude
            var start = 20
            repeat {
                start -= 1
                digits[start] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: magnitude % 10)
                magnitude /= 10
            } while magnitude != 0
            if value < 0 {
                start -= 1
                digits[start] = UInt8(ascii: "-")
            }
            sink.writeJSONBytes(UnsafeRawBufferPointer(rebasing: UnsafeMutableRawBufferPointer(digits)[start...]))
        }
    }

    /// Writes `s` as a JSON string (as the `String` overload appends it): quoted, with
    /// `"`, `\\` and control characters escaped; runs that need no escape are copied in one go.
    @inlinable package static func writeJSONString<Sink: JSONByteSink>(_ s: String, to sink: inout Sink) {
        var s = s
        sink.writeJSONByte(UInt8(ascii: "\""))
        s.withUTF8 { bytes in
            var run = 0
            for i in 0..<bytes.count {
                let byte = bytes[i]
                // Every byte of a multi-byte UTF-8 sequence is >= 0x80: only ASCII is escaped.
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
                if run < i { sink.writeJSONBytes(UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: bytes[run..<i]))) }
                run = i + 1
                switch byte {
                case UInt8(ascii: "\""): sink.writeJSONLiteral(#"\""#)
                case UInt8(ascii: "\\"): sink.writeJSONLiteral(#"\\"#)
                case 0x0A: sink.writeJSONLiteral(#"\n"#)
                case 0x0D: sink.writeJSONLiteral(#"\r"#)
                case 0x09: sink.writeJSONLiteral(#"\t"#)
                case 0x08: sink.writeJSONLiteral(#"\b"#)
                case 0x0C: sink.writeJSONLiteral(#"\f"#)
                default:
                    // \u00XX, lower-case hex (as String(format: "\\u%04x") wrote it).
                    sink.writeJSONLiteral(#"\u00"#)
                    sink.writeJSONByte(hexDigit(byte >> 4))
                    sink.writeJSONByte(hexDigit(byte & 0x0F))
                }
            }
            if run < bytes.count { sink.writeJSONBytes(UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: bytes[run...]))) }
        }
        sink.writeJSONByte(UInt8(ascii: "\""))
    }

    /// A nibble as a lower-case hex digit.
    @inlinable static func hexDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10
    }
}
