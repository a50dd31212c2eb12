import Foundation
import MacroBase
import MacroRPC
import Testing

/// The byte writer against the String writer it replaced (kept here as the reference): numbers,
/// escapes and structure must come out byte for byte the same; and the in-place UTF-8 check
/// against `String(validating:)`.
@Suite("Wire bytes: the byte writer and the UTF-8 check")
struct WireBytesTests {
    /// The JSON writer as it was before it wrote bytes (MacroValue+JSON.swift, `write(to:pretty:indent:)`).
    static func reference(_ value: MacroValue, pretty: Bool = false, indent: Int = 0) -> String {
        var out = ""
        switch value {
        case .undefined, .null, .function: out += "null"
        case .bool(let b): out += b ? "true" : "false"
        case .number(let n): out += referenceNumber(n)
        case .string(let s): out += referenceString(s)
        case .date: out += "unused"
        case .error(let name, let message, _):
            out += reference(.object(["name": .string(name), "message": .string(message)]), pretty: pretty, indent: indent)
        case .array(let items):
            if items.isEmpty { return "[]" }
            out += "["
            for (i, item) in items.enumerated() {
                if i > 0 { out += "," }
                if pretty { out += "\n" + String(repeating: "  ", count: indent + 1) }
                out += reference(item, pretty: pretty, indent: indent + 1)
            }
            if pretty { out += "\n" + String(repeating: "  ", count: indent) }
            out += "]"
        case .object(let object):
            let entries = object.filter {
                switch $0.value {
                case .undefined, .function: false
                default: true
                }
            }
            if entries.isEmpty { return "{}" }
            out += "{"
            for (i, (key, value)) in entries.enumerated() {
                if i > 0 { out += "," }
                if pretty { out += "\n" + String(repeating: "  ", count: indent + 1) }
                out += referenceString(key)
                out += pretty ? ": " : ":"
                out += reference(value, pretty: pretty, indent: indent + 1)
            }
            if pretty { out += "\n" + String(repeating: "  ", count: indent) }
            out += "}"
        }
        return out
    }

    static func referenceNumber(_ n: Double) -> String {
        guard n.isFinite else { return "null" }
        if n == n.rounded(), abs(n) < 1e21 {
            if n == 0 { return "0" }
            if abs(n) < 9.2e18 { return String(Int64(n)) }
            return String(format: "%.0f", n)
        }
        return "\(n)"
    }

    static func referenceString(_ s: String) -> String {
        var out = "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\u{08}": out += "\\b"
            case "\u{0C}": out += "\\f"
            default:
                if scalar.value < 0x20 {
                    out += String(format: "\\u%04x", scalar.value)
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }

    /// Spelled as text: several are not exactly representable (that is the point).
    static let numbers: [Double] = [
        "0", "-0", "1", "-1", "0.5", "0.1", "0.30000000000000004", "1.5e-7", "1e-7", "123456789012.5", "3.14159", "-2.5e-300",
        "9007199254740992", "9007199254740993", "1152921504606846977", "-1152921504606846977", "9.19e18", "9.2e18", "-9.2e18",
        "9.3e18", "1e20", "99999999999999990000", "1e21", "1e22", "-1e21", "1.7976931348623157e308", "5e-324",
        "9223372036854775807", "-9223372036854775808", "nan", "inf", "-inf", "4.35", "1e300", "123e-20",
    ].map { Double($0)! }

    @Test func numbersAreWrittenAsBefore() {
        for n in Self.numbers {
            var bytes: [UInt8] = []
            MacroValue.writeJSONNumber(n, to: &bytes)
            #expect(String(decoding: bytes, as: UTF8.self) == Self.referenceNumber(n), "\(n)")
            #expect(MacroValue.number(n).jsonText() == Self.referenceNumber(n), "\(n)")
            #expect(MacroValue.formatNumber(n) == Self.referenceNumber(n), "\(n)")
        }
    }

    @Test func stringsAreEscapedAsBefore() {
        let every = String(String.UnicodeScalarView((0..<0x80).map { Unicode.Scalar(UInt8($0)) }))
        for s in [every, "", "plain", "\u{e9}t\u{e9}", "a\"b\\c\u{7f}\u{2028}\u{1F600}", "\u{0}\u{1f}\n\r\t\u{8}\u{c}", "\u{FEFF}x"] {
            var bytes: [UInt8] = []
            MacroValue.writeJSONString(s, to: &bytes)
            #expect(String(decoding: bytes, as: UTF8.self) == Self.referenceString(s), "\(s.debugDescription)")
            var text = "x"
            MacroValue.writeJSONString(s, to: &text)
            #expect(text == "x" + Self.referenceString(s))
        }
    }

    @Test func valuesAreWrittenAsBeforeCompactAndPretty() {
        let value: MacroValue = [
            "a": [1, 2.5, "x", .null, .undefined, true, [], [:], ["k": .undefined]],
            "skipped": .undefined,
            "nested": ["deep": ["deeper": [-0.0, 1e21, "\u{1}"]]],
            "error": .error(name: "TypeError", message: "bad \"thing\"", stack: "at x"),
            "empty": [:],
        ]
        #expect(value.jsonText() == Self.reference(value))
        #expect(value.jsonText(pretty: true) == Self.reference(value, pretty: true))
        for item in Self.numbers.map(MacroValue.number) + ["s", .bool(false), .null, .undefined, [], [:]] {
            #expect(item.jsonText() == Self.reference(item))
        }
    }

    @Test func repliesAndRequestsAreTheSameTextAsBefore() {
        let id = RPCID(json: "1152921504606846977")
        let result: MacroValue = ["inner": 3.5, "f": .undefined]
        #expect(RPCCodec.response(id: id, result: result).text == #"{"jsonrpc":"2.0","id":1152921504606846977,"result":{"inner":3.5}}"#)
        #expect(RPCCodec.response(id: id, result: .undefined).text == #"{"jsonrpc":"2.0","id":1152921504606846977,"result":null}"#)
        let error = RPCError(code: -32000, message: "m", data: ["name": "x", "gone": .undefined])
        #expect(RPCCodec.response(id: .null, error: error).text == #"{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"m","data":{"name":"x"}}}"#)
        #expect(
            RPCCodec.response(id: .null, error: RPCError(code: 1, message: "m", data: .undefined)).text
                == #"{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"m"}}"#)
        #expect(RPCMessage(batch: []).text == "[]")
        #expect(RPCMessage(batch: [RPCMessage(text: "1"), RPCCodec.notification("n", [1])]).text == #"[1,{"jsonrpc":"2.0","method":"n","params":[1]}]"#)
        #expect(RPCMessage(text: "{}") == RPCMessage(text: "{}"))
        #expect(RPCCodec.response(id: id, result: 1) == RPCMessage(text: #"{"jsonrpc":"2.0","id":1152921504606846977,"result":1}"#))
    }

    static let utf8Cases: [[UInt8]] = [
        [], [0x41], [0xC3, 0xA9], [0xC0, 0x80], [0xC1, 0xBF], [0xC2, 0x80], [0xDF, 0xBF], [0xC3],
        [0xE0, 0x9F, 0x80], [0xE0, 0xA0, 0x80], [0xED, 0x9F, 0xBF], [0xED, 0xA0, 0x80], [0xEF, 0xBF, 0xBF], [0xE2, 0x82],
        [0xF0, 0x8F, 0xBF, 0xBF], [0xF0, 0x90, 0x80, 0x80], [0xF4, 0x8F, 0xBF, 0xBF], [0xF4, 0x90, 0x80, 0x80], [0xF5, 0x80, 0x80, 0x80],
        [0xF0, 0x9F, 0x98], [0x80], [0xBF], [0xFE], [0xFF], [0xE2, 0x28, 0xA1], [0x61, 0xF0, 0x9F, 0x98, 0x80, 0x62],
    ]

    @Test func theUTF8CheckAcceptsExactlyWhatStringValidatingAccepts() {
        var cases = Self.utf8Cases
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            cases.append(
                (0..<Int.random(in: 1...6, using: &generator)).map { _ in
                    [UInt8.random(in: 0x80...0xFF, using: &generator), UInt8.random(in: 0...0xFF, using: &generator), 0x41][Int.random(in: 0...2, using: &generator)]
                })
        }
        // The same between ASCII of every length up to 20 on either side: the check takes eight
        // ASCII bytes at a time, so a sequence must be judged wherever it falls in a word.
        let padded = cases.flatMap { bytes in
            (0...20).map { count in
                Array(repeating: UInt8(ascii: "a"), count: count) + bytes + Array(repeating: UInt8(ascii: "z"), count: (count * 7) % 21)
            }
        }
        for bytes in cases + padded {
            let expected = String(validating: bytes, as: UTF8.self) != nil
            #expect(bytes.withUnsafeBufferPointer { RPCCodec.isValidUTF8($0) } == expected, "\(bytes)")
        }
    }

    @Test func aLineThatIsNotUTF8GetsTheSameParseError() {
        guard case .single(.failure(let failure)) = RPCCodec.parse([0x7B, 0xED, 0xA0, 0x80, 0x7D]) else {
            Issue.record("accepted a surrogate")
            return
        }
        #expect(failure.error.message == "Parse error: the line is not valid UTF-8")
    }
}
