import MacroRPC
import NIOCore

/// What is written to a Unix-socket connection from outside its ``ConnectionHandler`` (from the
/// pipeline's tail, any thread): every write goes through the handler, the one place that
/// encodes messages into lines and counts and flushes what the connection sends.
enum ConnectionOutput: Sendable {
    /// A notification (`progress.changed`, `macro.console`, ...), encoded as one line by the handler.
    case message(RPCMessage)
    /// Bytes already framed: what an engine restart or the busy control owed the client, or an
    /// empty buffer whose write completes once everything before it has been written.
    case bytes(ByteBuffer)
}
