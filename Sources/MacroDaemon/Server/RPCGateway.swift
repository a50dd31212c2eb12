import MacroEngineCore
import MacroRPC
import NIOCore

/// The daemon's request handling for transports other than the Unix socket (the dashboard's
/// WebSocket and `POST /rpc`): the same parsing, the same ``EngineHost`` and the same
/// notification hub, so a WebSocket session is a connection like a socket client.
package final class RPCGateway: Sendable {
    private let host: EngineHost
    /// The configured progress channels (names and ranges), for clients that draw them.
    package let channels: [ProgressChannel]

    package init(host: EngineHost, channels: [ProgressChannel]) {
        self.host = host
        self.channels = channels
    }

    /// Registers `channel` as a connection (it counts in `engine.status`, may subscribe, and is
    /// closed on shutdown); `framing` writes its replies and notifications.
    package func open(_ channel: any Channel, framing: any MessageFraming) -> Connection {
        host.hub.register(channel, framing: framing)
    }

    /// Forgets a connection (its subscriptions end).
    package func close(_ connection: Connection) {
        host.hub.unregister(connection)
    }

    /// Handles one JSON-RPC message (a request or a batch), exactly as a line on the socket:
    /// the reply, the array of replies of a batch, or nil when nothing is to be answered. The
    /// future completes on the connection's loop (as every reply of the router does).
    package func handle(_ bytes: [UInt8], from connection: Connection) -> EventLoopFuture<RPCMessage?> {
        let loop = connection.channel.eventLoop
        switch RPCCodec.parse(bytes) {
        case .single(.failure(let failure)):
            return loop.makeSucceededFuture(RPCCodec.response(id: failure.id, error: failure.error))
        case .single(.success(let request)):
            return host.router.handle(request, from: connection)
        case .batch(let items):
            return host.router.handle(batch: items, from: connection)
        }
    }

    /// The Prometheus metrics in the text exposition format (`GET /metrics`), on `loop`.
    package func metrics(on loop: any EventLoop) -> EventLoopFuture<[UInt8]> {
        host.metricsText(on: loop)
    }

    /// Sets the dashboard URL that `engine.status` reports (nil: none).
    package func setDashboard(_ url: String?) {
        host.update { $0.dashboard = url }
    }
}

/// A listener beside the Unix socket that serves the same requests through an ``RPCGateway``
/// (the dashboard). macrod starts it once the socket listens and stops it on shutdown.
package protocol DaemonFrontend: Sendable {
    /// Starts listening; returns the URL to report in `engine.status`. Throws
    /// ``MacroDaemonError`` when it cannot. `resuming`: this process replaces a macrod whose
    /// engine stalled (same arguments; the old process did not shut down), so clients of the
    /// old one should find this one where they were.
    func start(gateway: RPCGateway, resuming: Bool) async throws -> String
    /// Stops listening and closes its connections.
    func stop() async
    /// The listening socket once started: an engine restart stops accepting on it and hands it
    /// to the next process, so no other process can take its port meanwhile.
    var listener: (any Channel)? { get }
    /// Before ``start(gateway:resuming:)``: listen on this descriptor, handed over by the
    /// stalled process, instead of binding again.
    func inherit(listener descriptor: Int32)
}
