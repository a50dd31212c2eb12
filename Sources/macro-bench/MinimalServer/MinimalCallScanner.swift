#if canImport(Glibc)
import Glibc
#endif

/// The parts of one `macro.call` request line, as byte ranges of the line.
struct MinimalCallRequest {
    /// The id's bytes, verbatim (a number, or a string with its quotes), for the reply.
    var id: Range<Int>
    /// The macro's name, between its quotes (escapes are not decoded: such a name is not found).
    var name: Range<Int>
    /// The `args` array, brackets included (nil when params has no `args`).
    var arguments: Range<Int>?
}

/// What scanning a request line gave: a call, or the JSON-RPC error to answer (with the id when
/// one was found).
enum MinimalScan {
    case call(MinimalCallRequest)
    case failure(id: Range<Int>?, code: Int, message: StaticString)
}

/// Scans a `macro.call` request line in place, without building a JSON value tree: a shallow
/// walk of the object's members that skips every value it does not need (strings, nested
/// objects and arrays are only stepped over). Only the minimal server uses it.
enum MinimalCallScanner {
    /// Scans one request line (without its newline).
    static func scan(_ line: UnsafeBufferPointer<UInt8>) -> MinimalScan {
        var jsonrpc: Range<Int>?, id: Range<Int>?, method: Range<Int>?, params: Range<Int>?
        let end = members(line, object: skipSpace(line, 0)) { key, value in
            switch true {
            case equals(line, key, "id"): id = value
            case equals(line, key, "method"): method = value
            case equals(line, key, "params"): params = value
            case equals(line, key, "jsonrpc"): jsonrpc = value
            default: break
            }
        }
        guard let end, skipSpace(line, end) == line.count else { return .failure(id: nil, code: -32700, message: "Parse error") }
        guard let jsonrpc, equals(line, jsonrpc, "\"2.0\""), let id else {
            return .failure(id: id, code: -32600, message: "Invalid Request")
        }
        guard let method, equals(line, method, "\"macro.call\"") else {
            return .failure(id: id, code: -32601, message: "Method not found")
        }
        var name: Range<Int>?, arguments: Range<Int>?
        let paramsEnd = params.flatMap { params in
            members(line, object: params.lowerBound) { key, value in
                if equals(line, key, "name") { name = value }
                if equals(line, key, "args") { arguments = value }
            }
        }
        let argumentsAreArray = arguments.map { byte(line, $0.lowerBound) == UInt8(ascii: "[") } ?? true
        guard paramsEnd != nil, let name, byte(line, name.lowerBound) == UInt8(ascii: "\""), argumentsAreArray else {
            return .failure(id: id, code: -32602, message: "Invalid params")
        }
        return .call(MinimalCallRequest(id: id, name: (name.lowerBound + 1)..<(name.upperBound - 1), arguments: arguments))
    }

    /// Calls `body` with each element of the array at `array` (brackets included); false when
    /// `body` returned false or the array is malformed.
    static func elements(_ line: UnsafeBufferPointer<UInt8>, array: Range<Int>, _ body: (Range<Int>) -> Bool) -> Bool {
        var i = skipSpace(line, array.lowerBound + 1)
        if byte(line, i) == UInt8(ascii: "]") { return true }
        while true {
            guard let end = valueEnd(line, from: i), body(i..<end) else { return false }
            i = skipSpace(line, end)
            switch byte(line, i) {
            case UInt8(ascii: ","): i = skipSpace(line, i + 1)
            case UInt8(ascii: "]"): return true
            default: return false
            }
        }
    }

    /// Calls `body(key, value)` for each member of the object at `start`; the index after the
    /// object, or nil when it is malformed. Keys are between their quotes; values verbatim.
    private static func members(_ line: UnsafeBufferPointer<UInt8>, object start: Int, _ body: (Range<Int>, Range<Int>) -> Void) -> Int? {
        guard byte(line, start) == UInt8(ascii: "{") else { return nil }
        var i = skipSpace(line, start + 1)
        if byte(line, i) == UInt8(ascii: "}") { return i + 1 }
        while true {
            guard byte(line, i) == UInt8(ascii: "\""), let keyEnd = stringEnd(line, from: i) else { return nil }
            let key = (i + 1)..<(keyEnd - 1)
            i = skipSpace(line, keyEnd)
            guard byte(line, i) == UInt8(ascii: ":") else { return nil }
            i = skipSpace(line, i + 1)
            guard let end = valueEnd(line, from: i) else { return nil }
            body(key, i..<end)
            i = skipSpace(line, end)
            switch byte(line, i) {
            case UInt8(ascii: ","): i = skipSpace(line, i + 1)
            case UInt8(ascii: "}"): return i + 1
            default: return nil
            }
        }
    }

    /// The index after the value at `i`: a string, an object or array (nesting and strings in it
    /// stepped over, not checked), or a scalar (up to the next delimiter). Nil when unterminated.
    private static func valueEnd(_ line: UnsafeBufferPointer<UInt8>, from i: Int) -> Int? {
        switch byte(line, i) {
        case UInt8(ascii: "\""):
            return stringEnd(line, from: i)
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            var depth = 0
            var j = i
            while j < line.count {
                switch line[j] {
                case UInt8(ascii: "\""):
                    guard let end = stringEnd(line, from: j) else { return nil }
                    j = end
                    continue
                case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    depth -= 1
                    if depth == 0 { return j + 1 }
                default: break
                }
                j += 1
            }
            return nil
        default:
            var j = i
            while j < line.count {
                switch line[j] {
                case UInt8(ascii: ","), UInt8(ascii: "}"), UInt8(ascii: "]"), UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\r"): break
                default:
                    j += 1
                    continue
                }
                break
            }
            return j > i ? j : nil
        }
    }

    /// The index after the string whose opening quote is at `i` (escapes stepped over).
    private static func stringEnd(_ line: UnsafeBufferPointer<UInt8>, from i: Int) -> Int? {
        var j = i + 1
        while j < line.count {
            switch line[j] {
            case UInt8(ascii: "\\"): j += 2
            case UInt8(ascii: "\""): return j + 1
            default: j += 1
            }
        }
        return nil
    }

    private static func skipSpace(_ line: UnsafeBufferPointer<UInt8>, _ i: Int) -> Int {
        var i = i
        while i < line.count, line[i] == UInt8(ascii: " ") || line[i] == UInt8(ascii: "\t") || line[i] == UInt8(ascii: "\r") { i += 1 }
        return i
    }

    /// The byte at `i`, or 0 past the end.
    private static func byte(_ line: UnsafeBufferPointer<UInt8>, _ i: Int) -> UInt8 { i < line.count ? line[i] : 0 }

    /// Whether the bytes at `range` are `literal`.
    static func equals(_ line: UnsafeBufferPointer<UInt8>, _ range: Range<Int>, _ literal: StaticString) -> Bool {
        guard range.count == literal.utf8CodeUnitCount, let base = line.baseAddress else { return false }
        return memcmp(base + range.lowerBound, literal.utf8Start, range.count) == 0
    }
}
