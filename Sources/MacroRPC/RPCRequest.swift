import Foundation
import MacroBase

/// One JSON-RPC request. `id == nil` marks a notification (no reply).
package struct RPCRequest: Sendable {
    /// The id exactly as the client wrote it; nil for a notification.
    package var id: RPCID?
    /// The method name.
    package var method: String
    /// The params: `.undefined` when absent, else an object or an array.
    package var params: MacroValue

    /// Creates a request.
    package init(id: RPCID?, method: String, params: MacroValue) {
        self.id = id
        self.method = method
        self.params = params
    }
}

/// What one line held.
package enum RPCLine: Sendable {
    /// One request, or the error to answer it with.
    case single(Result<RPCRequest, RPCFailure>)
    /// A batch: one result per element, in order.
    case batch([Result<RPCRequest, RPCFailure>])
}

/// An error to answer with, and the id to answer it under (null when unknown).
package struct RPCFailure: Error, Sendable {
    /// The id to answer under.
    package var id: RPCID
    /// The error.
    package var error: RPCError
}

/// Turns request lines into requests, and replies into lines.
package enum RPCCodec {
    /// JSON deeper than this is refused before it is parsed (no recursion on hostile input).
    package static let maximumDepth = 128

    /// The UTF-8 byte order mark, which RFC 8259 lets a parser ignore at the start of a text.
    static let byteOrderMark: [UInt8] = [0xEF, 0xBB, 0xBF]

    /// The line without a leading byte order mark.
    package static func strippingByteOrderMark(_ bytes: [UInt8]) -> ArraySlice<UInt8> {
        bytes.starts(with: byteOrderMark) ? bytes.dropFirst(3) : bytes[...]
    }

    /// The line's bytes without a leading byte order mark.
    static func strippingByteOrderMark(_ bytes: UnsafeBufferPointer<UInt8>) -> UnsafeBufferPointer<UInt8> {
        bytes.count >= 3 && bytes[0] == 0xEF && bytes[1] == 0xBB && bytes[2] == 0xBF ? UnsafeBufferPointer(rebasing: bytes[3...]) : bytes
    }

    /// True for a line with nothing to answer: empty, blanks, or only a byte order mark.
    package static func isBlank(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { isBlank($0) }
    }

    /// ``isBlank(_:)-([UInt8])`` on the line's bytes where they are (e.g. a socket's read buffer).
    package static func isBlank(_ line: UnsafeRawBufferPointer) -> Bool {
        strippingByteOrderMark(line.assumingMemoryBound(to: UInt8.self)).allSatisfy { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }
    }

    /// Parses one line: a request, a batch, or the error to answer.
    package static func parse(_ line: [UInt8]) -> RPCLine {
        line.withUnsafeBytes { parse($0) }
    }

    /// ``parse(_:)-([UInt8])`` on the line's bytes where they are (e.g. a socket's read buffer):
    /// no copy of the line, as an array or a string, is made.
    package static func parse(_ line: UnsafeRawBufferPointer) -> RPCLine {
        let bytes = strippingByteOrderMark(line.assumingMemoryBound(to: UInt8.self))
        guard isValidUTF8(bytes) else {
            return .single(.failure(RPCFailure(id: .null, error: RPCError(code: RPCError.parseError, message: "Parse error: the line is not valid UTF-8"))))
        }
        let document: JSONDocument
        do {
            // A single request (nearly every line): its members straight into the request, no
            // object built for the top level. The same parser, so the same errors.
            let text = UnsafeRawBufferPointer(bytes)
            var members = Members()
            if try JSONParser.parseTopObject(
                text, maximumDepth: maximumDepth,
                member: { key, value, raw in
                    switch key {
                    case "jsonrpc": members.jsonrpc = value
                    case "id": (members.id, members.rawID) = (value, raw)
                    case "method": members.method = value
                    case "params": members.params = value
                    default: break
                    }
                })
            {
                return .single(
                    request(
                        id: members.id, rawID: members.rawID.map { JSONParser.text(text, $0) },
                        jsonrpc: members.jsonrpc, method: members.method, params: members.params))
            }
            document = try JSONParser.parse(text, maximumDepth: maximumDepth, keepingRawMember: "id")
        } catch {
            let message =
                switch error.kind {
                case .tooDeep: "Parse error: JSON nested deeper than \(maximumDepth) levels"
                default: "Parse error: the line is not valid JSON: \(error)"
                }
            return .single(.failure(RPCFailure(id: .null, error: RPCError(code: RPCError.parseError, message: message))))
        }
        if case .array(let items) = document.value {
            guard !items.isEmpty else {
                return .single(.failure(RPCFailure(id: .null, error: RPCError(code: RPCError.invalidRequest, message: "Invalid Request: empty batch"))))
            }
            return .batch(items.enumerated().map { request(from: $0.element, rawID: document.rawMember(at: $0.offset)) })
        }
        return .single(request(from: document.value, rawID: document.rawMember(at: 0)))
    }

    /// The members of a request object that matter (nil: absent; the last of repeated ones).
    private struct Members {
        var jsonrpc: MacroValue?
        var id: MacroValue?
        var rawID: Range<Int>?
        var method: MacroValue?
        var params: MacroValue?
    }

    /// The request in a parsed value; `rawID` is its `id` member as written.
    package static func request(from value: MacroValue, rawID: String?) -> Result<RPCRequest, RPCFailure> {
        guard case .object(let fields) = value else {
            return .failure(RPCFailure(id: .null, error: RPCError(code: RPCError.invalidRequest, message: "Invalid Request: expected a JSON object")))
        }
        return request(id: fields["id"], rawID: rawID, jsonrpc: fields["jsonrpc"], method: fields["method"], params: fields["params"])
    }

    /// The request made of a request object's members (nil: absent); `rawID` is `id` as written.
    static func request(
        id idMember: MacroValue?, rawID: String?, jsonrpc: MacroValue?, method methodMember: MacroValue?,
        params paramsMember: MacroValue?
    ) -> Result<RPCRequest, RPCFailure> {
        var id: RPCID? = nil
        switch idMember {
        case nil: id = nil
        case .some(.string), .some(.number), .some(.null):
            id = RPCID(json: rawID ?? idMember!.jsonText())
        default:
            return .failure(RPCFailure(id: .null, error: RPCError(code: RPCError.invalidRequest, message: "Invalid Request: id must be a string, a number or null")))
        }
        let replyID = id ?? .null
        guard jsonrpc == "2.0" else {
            return .failure(RPCFailure(id: replyID, error: RPCError(code: RPCError.invalidRequest, message: "Invalid Request: \"jsonrpc\" must be \"2.0\"")))
        }
        guard case .string(let method)? = methodMember else {
            return .failure(RPCFailure(id: replyID, error: RPCError(code: RPCError.invalidRequest, message: "Invalid Request: \"method\" must be a string")))
        }
        let params = paramsMember ?? .undefined
        switch params {
        case .undefined, .object, .array: break
        default:
            return .failure(RPCFailure(id: replyID, error: RPCError(code: RPCError.invalidRequest, message: "Invalid Request: \"params\" must be an object or an array")))
        }
        return .success(RPCRequest(id: id, method: method, params: params))
    }

    /// `{"jsonrpc":"2.0","id":ID,"result":RESULT}` (`undefined` as null).
    package static func response(id: RPCID, result: MacroValue) -> RPCMessage {
        RPCMessage(.result(id: id, result: result))
    }

    /// `{"jsonrpc":"2.0","id":ID,"error":{code, message, data?}}`.
    package static func response(id: RPCID, error: RPCError) -> RPCMessage {
        RPCMessage(.error(id: id, error: error))
    }

    /// `{"jsonrpc":"2.0","method":METHOD,"params":PARAMS}`.
    package static func notification(_ method: String, _ params: MacroValue) -> RPCMessage {
        RPCMessage(.notification(method: method, params: params))
    }

    /// `macro.console`: one console line of a `macro.call` made with id `id` (echoed as written).
    package static func consoleNotification(id: RPCID, call: Int, level: String, message: String) -> RPCMessage {
        RPCMessage(.console(id: id, call: call, level: level, message: message))
    }

    /// True when `bytes` is well-formed UTF-8 (exactly what `String(validating:as:)` accepts),
    /// checked without building a string.
    package static func isValidUTF8(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        UTF8Validation.isValid(bytes)
    }
}
