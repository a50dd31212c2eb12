/// Why macro-otel could not do something: a code to act on and a message naming what was wrong
/// (the socket, the reply, the file, the setting).
public struct ExportError: Error, CustomStringConvertible, Sendable, Equatable {
    /// What kind of failure it is.
    public enum Code: String, Sendable, Equatable {
        /// Nothing listens at the socket (no file, a stale socket, macrod stopped).
        case unreachable
        /// The socket or macrod refused the connection (permissions, a uid not allowed).
        case refused
        /// The connection broke or macrod stopped answering in time.
        case connectionLost
        /// macrod answered something that is not what the protocol says (docs/protocol.md).
        case malformedReply
        /// macrod answered a request with a JSON-RPC error.
        case rpcError
        /// An option or an OTEL_* environment variable cannot be used.
        case configuration
        /// The state file (`--state`) cannot be read or written.
        case stateFile
    }

    /// What kind of failure it is.
    public var code: Code
    /// What happened, naming what was wrong.
    public var message: String
    /// For ``Code/rpcError``: the JSON-RPC error code macrod answered.
    public var rpcCode: Int?

    /// Creates an error.
    public init(_ code: Code, _ message: String, rpcCode: Int? = nil) {
        self.code = code
        self.message = message
        self.rpcCode = rpcCode
    }

    /// `CODE: MESSAGE`.
    public var description: String { "\(code.rawValue): \(message)" }
}
