import MacroBase

/// A request id exactly as the client wrote it (the JSON-RPC spec: the reply MUST carry the same
/// value). Kept as the raw JSON token, so `1152921504606846977`, `1e3`, `-0`, `1.50` and
/// `"\u00e9"` come back byte for byte instead of through a double or a re-encoded string.
@usableFromInline package struct RPCID: Sendable, Hashable, CustomStringConvertible {
    /// The id's JSON text: a number, a string with its quotes and escapes, or `null`.
    @usableFromInline package let json: String

    /// An id from its JSON text, as written.
    package init(json: String) { self.json = json }

    /// `null`: the id of a reply to a request whose id could not be read.
    package static let null = RPCID(json: "null")

    /// The JSON text.
    @usableFromInline package var description: String { json }
}

/// One message for the wire: a reply, a batch of replies or a notification. It keeps what it
/// says, not its text: the JSON is written when the message is, straight into the sink that
/// carries it (the socket's `ByteBuffer`, see `RPCMessage.line(allocator:)` in MacroDaemon), with
/// no intermediate `String`. ``text`` renders it (without the newline that ends the line).
@usableFromInline package struct RPCMessage: Sendable, Equatable {
    /// What the message says.
    @usableFromInline package enum Content: Sendable {
        /// JSON text, as it is.
        case text(String)
        /// `{"jsonrpc":"2.0","id":ID,"result":RESULT}` (`undefined` as null).
        case result(id: RPCID, result: MacroValue)
        /// `{"jsonrpc":"2.0","id":ID,"error":{code, message, data?}}`.
        case error(id: RPCID, error: RPCError)
        /// `{"jsonrpc":"2.0","id":ID,"method":METHOD,"params":PARAMS}`, without `params` when nil.
        case request(id: RPCID, method: String, params: MacroValue?)
        /// `{"jsonrpc":"2.0","method":METHOD,"params":PARAMS}` (`params` left out when undefined).
        case notification(method: String, params: MacroValue)
        /// `macro.console`: `{"jsonrpc":"2.0","method":"macro.console","params":{"id":ID,"call":N,"level":L,"message":M}}`.
        case console(id: RPCID, call: Int, level: String, message: String)
        /// The replies of a batch, as one JSON array.
        case batch([RPCMessage])
    }

    /// What the message says.
    @usableFromInline package let content: Content

    /// A message from its content.
    package init(_ content: Content) { self.content = content }

    /// A message from its JSON text.
    package init(text: String) { content = .text(text) }

    /// The replies of a batch, as one JSON array.
    package init(batch: [RPCMessage]) { content = .batch(batch) }

    /// The JSON text (without a newline).
    package var text: String { String(decoding: bytes, as: UTF8.self) }

    /// The JSON text's UTF-8 (without a newline).
    package var bytes: [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(128)
        writeJSON(to: &bytes)
        return bytes
    }

    /// Messages are equal when their JSON texts are.
    @usableFromInline package static func == (lhs: RPCMessage, rhs: RPCMessage) -> Bool { lhs.bytes == rhs.bytes }

    /// Writes the JSON text's UTF-8 to `sink` (without a newline).
    @inlinable package func writeJSON<Sink: JSONByteSink>(to sink: inout Sink) {
        switch content {
        case .text(let text):
            sink.writeJSONRaw(text)
        case .result(let id, let result):
            sink.writeJSONLiteral(#"{"jsonrpc":"2.0","id":"#)
            sink.writeJSONRaw(id.json)
            sink.writeJSONLiteral(#","result":"#)
            result.writeJSON(to: &sink)
            sink.writeJSONByte(UInt8(ascii: "}"))
        case .error(let id, let error):
            sink.writeJSONLiteral(#"{"jsonrpc":"2.0","id":"#)
            sink.writeJSONRaw(id.json)
            sink.writeJSONLiteral(#","error":"#)
            error.json.writeJSON(to: &sink)
            sink.writeJSONByte(UInt8(ascii: "}"))
        case .request(let id, let method, let params):
            sink.writeJSONLiteral(#"{"jsonrpc":"2.0","id":"#)
            sink.writeJSONRaw(id.json)
            sink.writeJSONLiteral(#","method":"#)
            MacroValue.writeJSONString(method, to: &sink)
            if let params {
                sink.writeJSONLiteral(#","params":"#)
                params.writeJSON(to: &sink)
            }
            sink.writeJSONByte(UInt8(ascii: "}"))
        case .notification(let method, let params):
            sink.writeJSONLiteral(#"{"jsonrpc":"2.0","method":"#)
            MacroValue.writeJSONString(method, to: &sink)
            // As a member of an object: undefined and functions are left out.
            switch params {
            case .undefined, .function: break
            default:
                sink.writeJSONLiteral(#","params":"#)
                params.writeJSON(to: &sink)
            }
            sink.writeJSONByte(UInt8(ascii: "}"))
        case .console(let id, let call, let level, let message):
            sink.writeJSONLiteral(#"{"jsonrpc":"2.0","method":"macro.console","params":{"id":"#)
            sink.writeJSONRaw(id.json)
            sink.writeJSONLiteral(#","call":"#)
            MacroValue.writeJSONNumber(Double(call), to: &sink)
            sink.writeJSONLiteral(#","level":"#)
            MacroValue.writeJSONString(level, to: &sink)
            sink.writeJSONLiteral(#","message":"#)
            MacroValue.writeJSONString(message, to: &sink)
            sink.writeJSONLiteral("}}")
        case .batch(let messages):
            sink.writeJSONByte(UInt8(ascii: "["))
            for (i, message) in messages.enumerated() {
                if i > 0 { sink.writeJSONByte(UInt8(ascii: ",")) }
                message.writeJSON(to: &sink)
            }
            sink.writeJSONByte(UInt8(ascii: "]"))
        }
    }
}
