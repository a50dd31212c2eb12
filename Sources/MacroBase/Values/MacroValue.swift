import Foundation
import OrderedCollections

/// A JavaScript value converted to Swift: `Sendable`, safe to keep and to pass between threads.
///
/// | JavaScript                  | MacroValue                      | Swift literal / accessor            |
/// |-----------------------------|---------------------------------|-------------------------------------|
/// | `undefined`                 | `.undefined`                    | `nil` reads back as `.undefined`    |
/// | `null`                      | `.null`                         | `.null`                             |
/// | boolean                     | `.bool`                         | `true`, `.boolValue`                |
/// | number                      | `.number(Double)`               | `3`, `2.5`, `.intValue`, `.doubleValue` |
/// | string (any UTF-16)         | `.string` (lone surrogates -> U+FFFD) | `"abc"`, `.stringValue`       |
/// | Array                       | `.array`                        | `[1, "a"]`                          |
/// | plain object                | `.object` (key order kept)      | `["k": 1]`                          |
/// | Date                        | `.date(Date)`                   |                                     |
/// | function                    | `.function(any MacroCallable)`  | callable from Swift                 |
/// | Error                       | `.error(name:message:stack:)`   |                                     |
/// | Symbol, BigInt, cycles      | a ``MacroError`` with code `.conversion` |                            |
public enum MacroValue: Sendable, Equatable {
    /// `undefined`.
    case undefined
    /// `null`.
    case null
    /// A boolean.
    case bool(Bool)
    /// A number (JavaScript numbers are doubles; integers are exact up to 2^53).
    case number(Double)
    /// A string.
    case string(String)
    /// An array.
    case array([MacroValue])
    /// An object's own enumerable properties, in JavaScript's order.
    case object(OrderedDictionary<String, MacroValue>)
    /// A `Date`.
    case date(Date)
    /// A JavaScript function, callable from Swift (the engine's `MacroFunction`).
    case function(any MacroCallable)
    /// An `Error` object.
    case error(name: String, message: String, stack: String?)

    /// The number, when this is a number.
    public var doubleValue: Double? { if case .number(let n) = self { return n } else { return nil } }
    /// The number as an `Int`, when it is a whole number in range.
    public var intValue: Int? {
        guard case .number(let n) = self, n.rounded() == n, let i = Int(exactly: n) else { return nil }
        return i
    }
    /// The string, when this is a string.
    public var stringValue: String? { if case .string(let s) = self { return s } else { return nil } }
    /// The boolean, when this is a boolean.
    public var boolValue: Bool? { if case .bool(let b) = self { return b } else { return nil } }
    /// The elements, when this is an array.
    public var arrayValue: [MacroValue]? { if case .array(let a) = self { return a } else { return nil } }
    /// The properties, when this is an object.
    public var objectValue: OrderedDictionary<String, MacroValue>? {
        if case .object(let o) = self { return o } else { return nil }
    }
    /// True for `undefined` and `null`.
    public var isNullish: Bool { self == .undefined || self == .null }

    /// Reads an object property (`.undefined` when missing or not an object).
    public subscript(key: String) -> MacroValue { objectValue?[key] ?? .undefined }
    /// Reads an array element (`.undefined` when out of range or not an array).
    public subscript(index: Int) -> MacroValue {
        guard let a = arrayValue, a.indices.contains(index) else { return .undefined }
        return a[index]
    }
}

extension MacroValue {
    /// Equality as values: objects are equal when they have the same properties with equal
    /// values, in any order (their order is kept for output only). `NaN` is not equal to itself.
    public static func == (lhs: MacroValue, rhs: MacroValue) -> Bool {
        switch (lhs, rhs) {
        case (.undefined, .undefined), (.null, .null): return true
        case (.bool(let a), .bool(let b)): return a == b
        case (.number(let a), .number(let b)): return a == b
        case (.string(let a), .string(let b)): return a == b
        case (.array(let a), .array(let b)): return a == b
        case (.object(let a), .object(let b)):
            return a.count == b.count && a.allSatisfy { key, value in b[key] == value }
        case (.date(let a), .date(let b)): return a == b
        case (.function(let a), .function(let b)): return a.isSame(as: b)
        case (.error(let n1, let m1, let s1), .error(let n2, let m2, let s2)): return n1 == n2 && m1 == m2 && s1 == s2
        default: return false
        }
    }
}

extension MacroValue: ExpressibleByNilLiteral {
    /// `nil` is `undefined`, as a missing value reads in JavaScript.
    public init(nilLiteral: ()) { self = .undefined }
}
extension MacroValue: ExpressibleByBooleanLiteral {
    /// A boolean literal.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}
extension MacroValue: ExpressibleByIntegerLiteral {
    /// An integer literal (a JavaScript number).
    public init(integerLiteral value: Int) { self = .number(Double(value)) }
}
extension MacroValue: ExpressibleByFloatLiteral {
    /// A floating-point literal.
    public init(floatLiteral value: Double) { self = .number(value) }
}
extension MacroValue: ExpressibleByStringLiteral {
    /// A string literal.
    public init(stringLiteral value: String) { self = .string(value) }
}
extension MacroValue: ExpressibleByArrayLiteral {
    /// An array literal.
    public init(arrayLiteral elements: MacroValue...) { self = .array(elements) }
}
extension MacroValue: ExpressibleByDictionaryLiteral {
    /// A dictionary literal (an object, keys in the literal's order).
    public init(dictionaryLiteral elements: (String, MacroValue)...) {
        self = .object(OrderedDictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}

extension MacroValue {
    /// Wraps a Swift value: `Int`, `Double`, `Bool`, `String`, `Date`, arrays and `[String: Any]`
    /// of those, `nil`. Anything else is a `.conversion` error naming its type.
    public init(any value: Any?) throws {
        switch value {
        case nil: self = .null
        case let v as MacroValue: self = v
        case let v as Bool: self = .bool(v)
        case let v as Int: self = .number(Double(v))
        case let v as Double: self = .number(v)
        case let v as Float: self = .number(Double(v))
        case let v as String: self = .string(v)
        case let v as Date: self = .date(v)
        case let v as [Any?]: self = .array(try v.map { try MacroValue(any: $0) })
        case let v as [String: Any?]:
            var object = OrderedDictionary<String, MacroValue>()
            for key in v.keys.sorted() { object[key] = try MacroValue(any: v[key] ?? nil) }
            self = .object(object)
        default:
            throw MacroError.conversion("cannot convert a Swift value of type \(type(of: value!)) to JavaScript")
        }
    }
}
