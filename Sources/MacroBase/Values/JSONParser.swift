import OrderedCollections

/// Why JSON text could not be parsed, and where.
public struct JSONParseError: Error, Equatable, CustomStringConvertible, Sendable {
    /// What kind of problem it was.
    public enum Kind: Sendable, Equatable {
        /// Not JSON: ``message`` says what was expected.
        case syntax
        /// Arrays and objects nested deeper than the parser's limit.
        case tooDeep
        /// A string holds bytes that are not UTF-8.
        case invalidUTF8
        /// A number too large for a double (JSON.parse would make it Infinity).
        case numberOutOfRange
    }

    /// The kind of problem.
    public var kind: Kind
    /// What was wrong, e.g. "expected ':' after an object key".
    public var message: String
    /// The byte offset where it was found.
    public var offset: Int

    /// Creates an error.
    public init(kind: Kind, message: String, offset: Int) {
        self.kind = kind
        self.message = message
        self.offset = offset
    }

    /// "`message` at byte `offset`".
    public var description: String { "\(message) at byte \(offset)" }
}

/// A strict RFC 8259 parser straight from UTF-8 bytes to ``MacroValue``: object keys keep their
/// order (a repeated key keeps its first place and its last value, as `JSON.parse` does), nesting
/// deeper than `maximumDepth` is refused before any recursion could exhaust the stack, and
/// numbers must be finite. About ten times faster than `JSONDecoder` for request lines.
public struct JSONParser {
    /// The default nesting limit.
    public static let defaultMaximumDepth = 128

    /// Parses one JSON text (surrounding whitespace allowed, nothing else after it).
    public static func parse(_ bytes: some Collection<UInt8>, maximumDepth: Int = defaultMaximumDepth) throws(JSONParseError) -> MacroValue {
        let contiguous = bytes.withContiguousStorageIfAvailable { buffer in
            Result { () throws(JSONParseError) in try parse(UnsafeRawBufferPointer(buffer), maximumDepth: maximumDepth) }
        }
        if let contiguous { return try contiguous.get() }
        return try Array(bytes).withUnsafeBytes { buffer in
            Result { () throws(JSONParseError) in try parse(buffer, maximumDepth: maximumDepth) }
        }.get()
    }

    /// Parses a string's UTF-8.
    public static func parse(_ text: String, maximumDepth: Int = defaultMaximumDepth) throws(JSONParseError) -> MacroValue {
        var text = text
        return try text.withUTF8 { buffer in
            Result { () throws(JSONParseError) in try parse(UnsafeRawBufferPointer(buffer), maximumDepth: maximumDepth) }
        }.get()
    }

    /// Parses UTF-8 where it is (e.g. a socket's read buffer), without copying it first.
    public static func parse(_ bytes: UnsafeRawBufferPointer, maximumDepth: Int = defaultMaximumDepth) throws(JSONParseError) -> MacroValue {
        let buffer = bytes.assumingMemoryBound(to: UInt8.self)
        var parser = Cursor(bytes: buffer, maximumDepth: maximumDepth)
        parser.skipWhitespace()
        let value = try parser.value(depth: 0)
        parser.skipWhitespace()
        guard parser.index == buffer.count else { throw parser.error("unexpected text after the JSON value") }
        return value
    }

    /// Parses one JSON text like ``parse(_:maximumDepth:)`` (a number beyond a double's range
    /// reads as ±Infinity, as `JSON.parse` reads it) and also returns the member `key` of
    /// the top-level object, or of each object directly in a top-level array, exactly as it was
    /// written (digits, exponent, sign and escapes kept), for echoing a JSON-RPC `id` byte for byte.
    public static func parse(
        _ bytes: some Collection<UInt8>, maximumDepth: Int = defaultMaximumDepth, keepingRawMember key: String
    ) throws(JSONParseError) -> JSONDocument {
        let contiguous = bytes.withContiguousStorageIfAvailable { buffer in
            Result { () throws(JSONParseError) in try parse(UnsafeRawBufferPointer(buffer), maximumDepth: maximumDepth, keepingRawMember: key) }
        }
        if let contiguous { return try contiguous.get() }
        return try Array(bytes).withUnsafeBytes { buffer in
            Result { () throws(JSONParseError) in try parse(buffer, maximumDepth: maximumDepth, keepingRawMember: key) }
        }.get()
    }

    /// ``parse(_:maximumDepth:keepingRawMember:)`` on UTF-8 where it is (e.g. a socket's read
    /// buffer), without copying it first.
    public static func parse(
        _ bytes: UnsafeRawBufferPointer, maximumDepth: Int = defaultMaximumDepth, keepingRawMember key: String
    ) throws(JSONParseError) -> JSONDocument {
        let buffer = bytes.assumingMemoryBound(to: UInt8.self)
        var parser = Cursor(bytes: buffer, maximumDepth: maximumDepth)
        parser.rawKey = key
        parser.hugeAsInfinity = true
        parser.skipWhitespace()
        parser.topIsArray = parser.index < buffer.count && buffer[parser.index] == UInt8(ascii: "[")
        let value = try parser.value(depth: 0)
        parser.skipWhitespace()
        guard parser.index == buffer.count else { throw parser.error("unexpected text after the JSON value") }
        // Valid JSON is valid UTF-8 here: the parser checked every string, the rest is ASCII.
        func text(_ range: Range<Int>) -> String { String(decoding: UnsafeBufferPointer(rebasing: buffer[range]), as: UTF8.self) }
        // A single object (nearly every request) needs no dictionary.
        if !parser.topIsArray { return JSONDocument(value: value, rawTopMember: parser.rawTop.map(text)) }
        return JSONDocument(value: value, rawMembers: parser.rawRanges.mapValues(text))
    }
}

extension JSONParser {
    /// Parses one JSON text whose top level is an object, as ``parse(_:maximumDepth:)-(UnsafeRawBufferPointer,_)``
    /// accepts it (the same checks, errors and offsets), without building that object: each
    /// top-level member goes to `member` in order, with its value and the byte range of its
    /// text as written (a repeated key comes again: the last one wins for a caller that keeps
    /// the last). A JSON-RPC request's four members need no dictionary, no hashing of keys.
    /// Returns false, having parsed nothing, when the text (after whitespace) does not start
    /// with `{`: the caller parses it as any other JSON.
    public static func parseTopObject(
        _ bytes: UnsafeRawBufferPointer, maximumDepth: Int = defaultMaximumDepth,
        member: (_ key: String, _ value: MacroValue, _ raw: Range<Int>) -> Void
    ) throws(JSONParseError) -> Bool {
        let buffer = bytes.assumingMemoryBound(to: UInt8.self)
        var parser = Cursor(bytes: buffer, maximumDepth: maximumDepth)
        parser.hugeAsInfinity = true
        parser.skipWhitespace()
        guard parser.index < buffer.count, buffer[parser.index] == UInt8(ascii: "{") else { return false }
        try parser.topObject(member)
        parser.skipWhitespace()
        guard parser.index == buffer.count else { throw parser.error("unexpected text after the JSON value") }
        return true
    }

    /// The text of `range` of `bytes` (valid UTF-8: a range a parse reported).
    public static func text(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>) -> String {
        String(decoding: UnsafeRawBufferPointer(rebasing: bytes[range]), as: UTF8.self)
    }
}

/// A parsed JSON text and the raw text of one member (see
/// ``JSONParser/parse(_:maximumDepth:keepingRawMember:)``).
public struct JSONDocument: Sendable, Equatable {
    /// The parsed value.
    public var value: MacroValue
    /// The member's text as written, by position: `0` for a top-level object, the element index
    /// for objects directly in a top-level array. Objects without the member are absent.
    public var rawMembers: [Int: String] {
        if let rawTopMember { return [0: rawTopMember] }
        return rawElementMembers
    }
    /// The member of a top-level object (kept apart: no dictionary for a single request).
    private var rawTopMember: String?
    /// The members of the objects in a top-level array, by index.
    private var rawElementMembers: [Int: String]

    /// A document with the members of the objects in a top-level array, by index.
    public init(value: MacroValue, rawMembers: [Int: String]) {
        self.value = value
        self.rawTopMember = nil
        self.rawElementMembers = rawMembers
    }

    /// A document whose top level is not an array, with its object's member (nil: none).
    init(value: MacroValue, rawTopMember: String?) {
        self.value = value
        self.rawTopMember = rawTopMember
        self.rawElementMembers = [:]
    }

    /// The member's text at `position` (as ``rawMembers`` has it), without building a dictionary.
    public func rawMember(at position: Int) -> String? {
        if let rawTopMember { return position == 0 ? rawTopMember : nil }
        return rawElementMembers[position]
    }

    /// Documents are equal when their values and raw members are.
    public static func == (lhs: JSONDocument, rhs: JSONDocument) -> Bool {
        lhs.value == rhs.value && lhs.rawMembers == rhs.rawMembers
    }
}

private struct Cursor {
    let bytes: UnsafeBufferPointer<UInt8>
    let maximumDepth: Int
    var index = 0
    /// The member whose raw text is recorded (for the top-level object or the top array's objects).
    var rawKey: String?
    var topIsArray = false
    var topElement = 0
    /// The member of the top-level object.
    var rawTop: Range<Int>?
    /// The members of the objects in a top-level array, by index.
    var rawRanges: [Int: Range<Int>] = [:]
    /// A number beyond a double's range reads as ±Infinity, as JavaScript's `JSON.parse` reads it,
    /// instead of failing (JSON-RPC requests: an id such as `1e400` is valid JSON, echoed as written).
    var hugeAsInfinity = false

    init(bytes: UnsafeBufferPointer<UInt8>, maximumDepth: Int) {
        self.bytes = bytes
        self.maximumDepth = maximumDepth
    }

    func error(_ message: String, _ kind: JSONParseError.Kind = .syntax) -> JSONParseError {
        JSONParseError(kind: kind, message: message, offset: index)
    }

    mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    mutating func value(depth: Int) throws(JSONParseError) -> MacroValue {
        guard index < bytes.count else { throw error("unexpected end of the text") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try object(depth: depth + 1)
        case UInt8(ascii: "["): return try array(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try number())
        default: throw error("unexpected character '\(Self.describe(bytes[index]))'")
        }
    }

    mutating func literal(_ word: StaticString) throws(JSONParseError) {
        let count = word.utf8CodeUnitCount
        guard index + count <= bytes.count else { throw error("unexpected end of the text") }
        for i in 0..<count where bytes[index + i] != word.utf8Start[i] {
            throw error("unexpected character '\(Self.describe(bytes[index]))'")
        }
        index += count
    }

    mutating func object(depth: Int) throws(JSONParseError) -> MacroValue {
        guard depth <= maximumDepth else { throw error("JSON nested deeper than \(maximumDepth) levels", .tooDeep) }
        index += 1
        var fields = OrderedDictionary<String, MacroValue>()
        // Room for a JSON-RPC request's members without growing one by one.
        fields.reserveCapacity(4)
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            return .object(fields)
        }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw error("expected a string key in an object") }
            let key = try string()
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw error("expected ':' after an object key") }
            index += 1
            skipWhitespace()
            let start = index
            fields[key] = try value(depth: depth)
            if let rawKey, depth == 1 || (depth == 2 && topIsArray), key == rawKey {
                if depth == 1 { rawTop = start..<index } else { rawRanges[topElement] = start..<index }
            }
            skipWhitespace()
            guard index < bytes.count else { throw error("unexpected end of the text in an object") }
            if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
            if bytes[index] == UInt8(ascii: "}") { index += 1; return .object(fields) }
            throw error("expected ',' or '}' in an object")
        }
    }

    /// ``object(depth:)`` at the top level (depth 1), each member handed to `member` instead of
    /// stored: the same steps, so the same errors at the same offsets.
    mutating func topObject(_ member: (String, MacroValue, Range<Int>) -> Void) throws(JSONParseError) {
        guard 1 <= maximumDepth else { throw error("JSON nested deeper than \(maximumDepth) levels", .tooDeep) }
        index += 1
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            return
        }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw error("expected a string key in an object") }
            let key = try string()
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw error("expected ':' after an object key") }
            index += 1
            skipWhitespace()
            let start = index
            let value = try value(depth: 1)
            member(key, value, start..<index)
            skipWhitespace()
            guard index < bytes.count else { throw error("unexpected end of the text in an object") }
            if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
            if bytes[index] == UInt8(ascii: "}") { index += 1; return }
            throw error("expected ',' or '}' in an object")
        }
    }

    mutating func array(depth: Int) throws(JSONParseError) -> MacroValue {
        guard depth <= maximumDepth else { throw error("JSON nested deeper than \(maximumDepth) levels", .tooDeep) }
        index += 1
        var items: [MacroValue] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            return .array(items)
        }
        while true {
            skipWhitespace()
            if depth == 1 { topElement = items.count }
            items.append(try value(depth: depth))
            skipWhitespace()
            guard index < bytes.count else { throw error("unexpected end of the text in an array") }
            if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
            if bytes[index] == UInt8(ascii: "]") { index += 1; return .array(items) }
            throw error("expected ',' or ']' in an array")
        }
    }

    mutating func string() throws(JSONParseError) -> String {
        index += 1
        let start = index
        // Fast path: no escapes. ASCII (nearly every string) needs no UTF-8 check.
        var ascii = true
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let text = UnsafeBufferPointer(rebasing: bytes[start..<index])
                guard ascii || UTF8Validation.isValid(text) else {
                    throw JSONParseError(kind: .invalidUTF8, message: "a string is not valid UTF-8", offset: start)
                }
                index += 1
                return String(decoding: text, as: UTF8.self)
            }
            if byte == UInt8(ascii: "\\") { break }
            if byte < 0x20 { throw error("a control character in a string must be escaped") }
            if byte >= 0x80 { ascii = false }
            index += 1
        }
        guard index < bytes.count else { throw error("unterminated string") }
        var scalars: [UInt8] = Array(bytes[start..<index])
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                guard scalars.withUnsafeBufferPointer({ UTF8Validation.isValid($0) }) else {
                    throw JSONParseError(kind: .invalidUTF8, message: "a string is not valid UTF-8", offset: start)
                }
                return String(decoding: scalars, as: UTF8.self)
            case UInt8(ascii: "\\"):
                index += 1
                guard index < bytes.count else { throw error("unterminated string") }
                let escape = bytes[index]
                index += 1
                switch escape {
                case UInt8(ascii: "\""): scalars.append(0x22)
                case UInt8(ascii: "\\"): scalars.append(0x5C)
                case UInt8(ascii: "/"): scalars.append(0x2F)
                case UInt8(ascii: "b"): scalars.append(0x08)
                case UInt8(ascii: "f"): scalars.append(0x0C)
                case UInt8(ascii: "n"): scalars.append(0x0A)
                case UInt8(ascii: "r"): scalars.append(0x0D)
                case UInt8(ascii: "t"): scalars.append(0x09)
                case UInt8(ascii: "u"):
                    var code = try hex4()
                    if (0xD800...0xDBFF).contains(code), index + 1 < bytes.count,
                        bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u")
                    {
                        let save = index
                        index += 2
                        let low = try hex4()
                        if (0xDC00...0xDFFF).contains(low) {
                            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                        } else {
                            index = save
                        }
                    }
                    // A lone surrogate cannot be UTF-8: it becomes U+FFFD.
                    let scalar = Unicode.Scalar(code) ?? "\u{FFFD}"
                    scalars.append(contentsOf: Array(String(Character(scalar)).utf8))
                default:
                    index -= 2
                    throw error("unknown escape '\\\(Self.describe(escape))' in a string")
                }
            default:
                if byte < 0x20 { throw error("a control character in a string must be escaped") }
                scalars.append(byte)
                index += 1
            }
        }
        throw error("unterminated string")
    }

    mutating func hex4() throws(JSONParseError) -> UInt32 {
        guard index + 4 <= bytes.count else { throw error("unterminated \\u escape") }
        var code: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw error("expected four hex digits after \\u")
            }
            code = code << 4 | UInt32(digit)
            index += 1
        }
        return code
    }

    mutating func number() throws(JSONParseError) -> Double {
        let start = index
        var integer = true
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count, Self.isDigit(bytes[index]) else { throw error("expected a digit") }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
            if index < bytes.count, Self.isDigit(bytes[index]) { throw error("a number cannot start with 0") }
        } else {
            while index < bytes.count, Self.isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            integer = false
            index += 1
            guard index < bytes.count, Self.isDigit(bytes[index]) else { throw error("expected a digit after '.'") }
            while index < bytes.count, Self.isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            integer = false
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard index < bytes.count, Self.isDigit(bytes[index]) else { throw error("expected a digit in the exponent") }
            while index < bytes.count, Self.isDigit(bytes[index]) { index += 1 }
        }
        let slice = UnsafeBufferPointer(rebasing: bytes[start..<index])
        if !integer, let exact = Self.shortDecimal(slice) { return exact }
        // Whole numbers of up to 15 digits are exact in a double: no string conversion needed.
        if integer, slice.count <= 16 {
            var value: Int64 = 0
            var negative = false
            for byte in slice {
                if byte == UInt8(ascii: "-") { negative = true } else { value = value * 10 + Int64(byte - UInt8(ascii: "0")) }
            }
            if value < (1 << 53) { return negative ? (value == 0 ? -0.0 : -Double(value)) : Double(value) }
        }
        if hugeAsInfinity, let number = Double(String(decoding: slice, as: UTF8.self)) { return number }
        guard let number = Double(String(decoding: slice, as: UTF8.self)), number.isFinite else {
            throw JSONParseError(kind: .numberOutOfRange, message: "the number is too large for a double", offset: start)
        }
        return number
    }

    /// A decimal fraction without an exponent and with at most 15 digits (`0.5`, `-12.25`),
    /// converted without `strtod`: its digits as a whole number (exact in a double, < 2^53)
    /// divided by a power of ten that is exact too (10^1 ... 10^15), one correctly rounded
    /// division, so the same double `strtod` gives (Clinger's fast path). nil: another form.
    static func shortDecimal(_ slice: UnsafeBufferPointer<UInt8>) -> Double? {
        guard slice.count <= 17 else { return nil }
        var mantissa: Int64 = 0
        var digits = 0
        var fraction = -1
        var negative = false
        for byte in slice {
            switch byte {
            case UInt8(ascii: "-"): negative = true
            case UInt8(ascii: "."): fraction = 0
            case UInt8(ascii: "0")...UInt8(ascii: "9"):
                mantissa = mantissa * 10 + Int64(byte - UInt8(ascii: "0"))
                digits += 1
                if fraction >= 0 { fraction += 1 }
            default: return nil
            }
        }
        guard fraction > 0, digits <= 15 else { return nil }
        let value = Double(mantissa) / powersOfTen[fraction]
        return negative ? -value : value
    }

    /// 10^0 ... 10^15, each exact in a double.
    static let powersOfTen: [Double] = (0...15).map { power in (0..<power).reduce(1.0) { value, _ in value * 10 } }

    static func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

    static func describe(_ byte: UInt8) -> String {
        byte >= 0x20 && byte < 0x7F ? String(UnicodeScalar(byte)) : "\\x" + String(byte, radix: 16, uppercase: true)
    }
}

/// A UTF-8 check that builds no string (`String(validating:)` is generic and makes one).
package enum UTF8Validation {
    /// True when `bytes` is well-formed UTF-8, exactly what `String(validating:as:)` accepts: no
    /// overlong forms, surrogates or code points past U+10FFFF. ASCII takes the first branch only.
    package static func isValid(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var i = 0
        let count = bytes.count
        // Eight bytes at a time while they are all ASCII (a request line usually is whole):
        // then the byte by byte check below takes over, from the first word with a high bit.
        if let base = bytes.baseAddress {
            let raw = UnsafeRawPointer(base)
            while i + 8 <= count, raw.loadUnaligned(fromByteOffset: i, as: UInt64.self) & 0x8080_8080_8080_8080 == 0 { i += 8 }
        }
        while i < count {
            let lead = bytes[i]
            if lead < 0x80 {
                i += 1
                continue
            }
            // The Unicode Standard's table 3-7: the second byte's range depends on the first.
            let trailing: Int
            var low: UInt8 = 0x80
            var high: UInt8 = 0xBF
            switch lead {
            case 0xC2...0xDF: trailing = 1
            case 0xE0: trailing = 2; low = 0xA0
            case 0xE1...0xEC, 0xEE...0xEF: trailing = 2
            case 0xED: trailing = 2; high = 0x9F
            case 0xF0: trailing = 3; low = 0x90
            case 0xF1...0xF3: trailing = 3
            case 0xF4: trailing = 3; high = 0x8F
            default: return false
            }
            guard i + trailing < count, bytes[i + 1] >= low, bytes[i + 1] <= high else { return false }
            var k = 2
            while k <= trailing {
                guard bytes[i + k] & 0xC0 == 0x80 else { return false }
                k += 1
            }
            i += trailing + 1
        }
        return true
    }
}
