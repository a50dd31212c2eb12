import MacroBase

/// A message from macrod as a client reads it.
package enum RPCIncoming: Sendable, Equatable {
    /// The reply to a request: the id it carries (null for a line macrod could not read) and the
    /// request's result or error.
    case response(id: MacroValue, Result<MacroValue, RPCError>)
    /// A notification (no id): the whole message, `method` and `params`.
    case notification(MacroValue)
}

/// The client's half of the codec: the same wire format the daemon parses with
/// ``RPCCodec/parse(_:)`` and answers with ``RPCCodec/response(id:result:)``.
extension RPCCodec {
    /// `{"jsonrpc":"2.0","id":ID,"method":METHOD,"params":PARAMS}`, without `params` when nil.
    package static func request(id: RPCID, method: String, params: MacroValue?) -> RPCMessage {
        RPCMessage(.request(id: id, method: method, params: params))
    }

    /// What a parsed line from macrod is: a notification when it has a method and no id, else a
    /// response, failed when it carries an error object.
    package static func incoming(_ message: MacroValue) -> RPCIncoming {
        if message["id"] == .undefined, message["method"] != .undefined { return .notification(message) }
        if let error = RPCError(json: message["error"]) { return .response(id: message["id"], .failure(error)) }
        return .response(id: message["id"], .success(message["result"]))
    }
}
