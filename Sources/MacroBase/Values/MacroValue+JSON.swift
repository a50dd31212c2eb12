import Foundation
import OrderedCollections

extension MacroValue {
    /// JSON text as `JSON.stringify` would write it: `undefined` and functions become `null` at the
    /// top level and in arrays and are left out of objects; dates are ISO 8601 strings; errors are
    /// `{"name", "message"}`; non-finite numbers are `null`.
    public func jsonText(pretty: Bool = false) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(64)
        writeJSON(to: &bytes, pretty: pretty)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Formats a number as JavaScript prints it in JSON: whole numbers without a fraction,
    /// non-finite numbers as `null`.
    @usableFromInline package static func formatNumber(_ n: Double) -> String {
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
        var bytes: [UInt8] = []
        bytes.reserveCapacity(s.utf8.count + 2)
        writeJSONString(s, to: &bytes)
        out += String(decoding: bytes, as: UTF8.self)
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
