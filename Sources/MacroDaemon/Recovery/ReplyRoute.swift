import MacroRPC
import NIOCore

/// Where the reply to a request admitted to the engine goes. A single request read from the Unix
/// socket goes straight back to its connection's handler (no promise, no callback per request);
/// everything else that waits for a reply (a JSON-RPC batch's element, a WebSocket message,
/// `POST /rpc`, a cancel that waits for its call to stop) completes a promise.
enum ReplyRoute: Sendable {
    /// To the connection's ``ReplyReceiver`` (the socket's ``ConnectionHandler``), which writes it.
    case connection(Connection)
    /// Completes the promise.
    case promise(EventLoopPromise<RPCMessage?>)

    /// The loop the reply is delivered on.
    var eventLoop: any EventLoop {
        switch self {
        case .connection(let connection): connection.channel.eventLoop
        case .promise(let promise): promise.futureResult.eventLoop
        }
    }

    /// Delivers `reply` (nil: nothing to write, the request was a notification) and flushes it,
    /// from any thread.
    func deliver(_ reply: RPCMessage?) {
        switch self {
        case .connection(let connection): connection.deliver(reply)
        case .promise(let promise): promise.succeed(reply)
        }
    }
}

/// What receives the replies routed to a connection (``ReplyRoute/connection(_:)``): its
/// transport's handler, on the connection's loop.
protocol ReplyReceiver: AnyObject {
    /// Writes `reply` (nil: a notification was answered: only counted) without flushing.
    func receive(_ reply: RPCMessage?)
    /// Flushes what ``receive(_:)`` wrote.
    func flushReplies()
}
