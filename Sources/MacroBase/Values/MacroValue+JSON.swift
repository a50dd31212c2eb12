import Foundation
import OrderedCollections

extension MacroValue {
    /// JSON text as `JSON.stringify` would write it: `undefined` and functions become `null` at the
    /// top level and in arrays and are left out of objects; dates are ISO 8601 strings; errors are
    /// `{"name", "message"}`; non-finite numbers are `null`.
    public func jsonText(pretty: Bool = false) -> String {
        var out = ""
        write(to: &out, pretty: pretty, indent: 0)
        return out
    }

    private var omittedInObject: Bool {
        switch self {
        case .undefined, .function: return true
        default: return false
        }
    }

    private func write(to out: inout String, pretty: Bool, indent: Int) {
        switch self {
        case .undefined, .null, .function: out += "null"
        case .bool(let b): out += b ? "true" : "false"
        case .number(let n): out += MacroValue.formatNumber(n)
        case .string(let s): MacroValue.writeJSONString(s, to: &out)
        case .date(let d):
            MacroValue.writeJSONString(d.formatted(.iso8601.year().month().day().time(includingFractionalSeconds: true).timeZone(separator: .omitted)), to: &out)
        case .error(let name, let message, _):
            MacroValue.object(["name": .string(name), "message": .string(message)]).write(to: &out, pretty: pretty, indent: indent)
        case .array(let items):
            if items.isEmpty { out += "[]"; return }
            out += "["
            for (i, item) in items.enumerated() {
                if i > 0 { out += "," }
                if pretty { out += "\n" + String(repeating: "  ", count: indent + 1) }
                item.write(to: &out, pretty: pretty, indent: indent + 1)
            }
            if pretty { out += "\n" + String(repeating: "  ", count: indent) }
            out += "]"
        case .object(let object):
            let entries = object.filter { !$0.value.omittedInObject }
            if entries.isEmpty { out += "{}"; return }
            out += "{"
            for (i, (key, value)) in entries.enumerated() {
                if i > 0 { out += "," }
                if pretty { out += "\n" + String(repeating: "  ", count: indent + 1) }
                MacroValue.writeJSONString(key, to: &out)
                out += pretty ? ": " : ":"
                value.write(to: &out, pretty: pretty, indent: indent + 1)
            }
            if pretty { out += "\n" + String(repeating: "  ", count: indent) }
            out += "}"
        }
    }

    /// Formats a number as JavaScript prints it in JSON: whole numbers without a fraction,
    /// non-finite numbers as `null`.
    package static func formatNumber(_ n: Double) -> String {
        guard n.isFinite else { return "null" }
        if n == n.rounded(), abs(n) < 1e21 {
            if n == 0 { return "0" }
            if abs(n) < 9.2e18 { return String(Int64(n)) }
            return String(format: "%.0f", n)
        }
        return "\(n)"
    }

    /// Appends `s` as a JSON string: quoted, with `"`, `\\` and control characters escaped.
    package static func writeJSONString(_ s: String, to out: inout String) {
        out += "\""
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
        out += "\""
    }

    /// Parses JSON text. Throws a `.conversion` error naming the problem for invalid JSON.
    public init(jsonText: String) throws {
        do {
            self = try JSONParser.parse(jsonText)
        } catch {
            throw MacroError.conversion("not valid JSON (\(error)): \(jsonText.prefix(60))")
        }
    }
}

extension MacroValue: Decodable {
    private struct FieldKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    /// Decodes any JSON value; object keys come out sorted (JSON objects are unordered).
    public init(from decoder: any Decoder) throws {
        if let keyed = try? decoder.container(keyedBy: FieldKey.self) {
            var object = OrderedDictionary<String, MacroValue>()
            for key in keyed.allKeys.sorted(by: { $0.stringValue < $1.stringValue }) {
                object[key.stringValue] = try keyed.decode(MacroValue.self, forKey: key)
            }
            self = .object(object)
            return
        }
        if var unkeyed = try? decoder.unkeyedContainer() {
            var items: [MacroValue] = []
            while !unkeyed.isAtEnd { items.append(try unkeyed.decode(MacroValue.self)) }
            self = .array(items)
            return
        }
        let single = try decoder.singleValueContainer()
        if single.decodeNil() {
            self = .null
        } else if let b = try? single.decode(Bool.self) {
            self = .bool(b)
        } else if let n = try? single.decode(Double.self) {
            self = .number(n)
        } else {
            self = .string(try single.decode(String.self))
        }
    }
}
