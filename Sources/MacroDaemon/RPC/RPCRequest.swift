import Foundation
import MacroEngineCore
import MacroRPC

/// One JSON-RPC request. `id == nil` marks a notification (no reply).
package struct RPCRequest: Sendable {
    package var id: MacroValue?
    package var method: String
    package var params: MacroValue
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
    package var id: MacroValue
    package var error: RPCError
}

/// Turns request lines into requests, and replies into lines.
package enum RPCCodec {
    /// JSON deeper than this is refused before it is parsed (no recursion on hostile input).
    package static let maximumDepth = 128

    package static func parse(_ bytes: [UInt8]) -> RPCLine {
        // ASCII (nearly every request) is valid UTF-8; anything else is checked as a whole.
        if !bytes.allSatisfy({ $0 < 0x80 }), String(validating: bytes, as: UTF8.self) == nil {
            return .single(.failure(RPCFailure(id: .null, error: RPCError(code: RPCError.parseError, message: "Parse error: the line is not valid UTF-8"))))
        }
        let value: MacroValue
        do {
            value = try JSONParser.parse(bytes, maximumDepth: maximumDepth)
        } catch {
            let message = switch error.kind {
            case .tooDeep: "Parse error: JSON nested deeper than \(maximumDepth) levels"
            default: "Parse error: the line is not valid JSON: \(error)"
            }
            return .single(.failure(RPCFailure(id: .null, error: RPCError(code: RPCError.parseError, message: message))))
        }
        if case .array(let items) = value {
            guard !items.isEmpty else {
                return .single(.failure(RPCFailure(id: .null, error: RPCError(code: RPCError.invalidRequest, message: "Invalid Request: empty batch"))))
            }
            return .batch(items.map(request(from:)))
        }
        return .single(request(from: value))
    }

    package static func request(from value: MacroValue) -> Result<RPCRequest, RPCFailure> {
        guard case .object(let fields) = value else {
            return .failure(RPCFailure(id: .null, error: RPCError(code: RPCError.invalidRequest, message: "Invalid Request: expected a JSON object")))
        }
        let rawID = fields["id"]
        var id: MacroValue? = nil
        switch rawID {
        case nil: id = nil
        case .some(.string), .some(.number), .some(.null): id = rawID
        default:
            return .failure(RPCFailure(id: .null, error: RPCError(code: RPCError.invalidRequest, message: "Invalid Request: id must be a string, a number or null")))
        }
        let replyID = id ?? .null
        guard fields["jsonrpc"] == "2.0" else {
            return .failure(RPCFailure(id: replyID, error: RPCError(code: RPCError.invalidRequest, message: "Invalid Request: \"jsonrpc\" must be \"2.0\"")))
        }
        guard case .string(let method)? = fields["method"] else {
            return .failure(RPCFailure(id: replyID, error: RPCError(code: RPCError.invalidRequest, message: "Invalid Request: \"method\" must be a string")))
        }
        let params = fields["params"] ?? .undefined
        switch params {
        case .undefined, .object, .array: break
        default:
            return .failure(RPCFailure(id: replyID, error: RPCError(code: RPCError.invalidRequest, message: "Invalid Request: \"params\" must be an object or an array")))
        }
        return .success(RPCRequest(id: id, method: method, params: params))
    }

    package static func response(id: MacroValue, result: MacroValue) -> MacroValue {
        .object(["jsonrpc": "2.0", "id": id, "result": result == .undefined ? .null : result])
    }

    package static func response(id: MacroValue, error: RPCError) -> MacroValue {
        .object(["jsonrpc": "2.0", "id": id, "error": error.json])
    }

    package static func notification(_ method: String, _ params: MacroValue) -> MacroValue {
        .object(["jsonrpc": "2.0", "method": .string(method), "params": params])
    }
}
