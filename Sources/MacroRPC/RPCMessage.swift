/// A request id exactly as the client wrote it (the JSON-RPC spec: the reply MUST carry the same
/// value). Kept as the raw JSON token, so `1152921504606846977`, `1e3`, `-0`, `1.50` and
/// `"\u00e9"` come back byte for byte instead of through a double or a re-encoded string.
package struct RPCID: Sendable, Hashable, CustomStringConvertible {
    /// The id's JSON text: a number, a string with its quotes and escapes, or `null`.
    package let json: String

    /// An id from its JSON text, as written.
    package init(json: String) { self.json = json }

    /// `null`: the id of a reply to a request whose id could not be read.
    package static let null = RPCID(json: "null")

    /// The JSON text.
    package var description: String { json }
}

/// One message for the wire: a reply, a batch of replies or a notification, as JSON text
/// (without the newline that ends the line).
package struct RPCMessage: Sendable, Equatable {
    /// The JSON text.
    package let text: String

    /// A message from its JSON text.
    package init(text: String) { self.text = text }

    /// The replies of a batch, as one JSON array.
    package init(batch: [RPCMessage]) {
        text = "[" + batch.map(\.text).joined(separator: ",") + "]"
    }
}
