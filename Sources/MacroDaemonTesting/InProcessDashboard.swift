import MacroBase
import MacroDaemon
import MacroRPC
import NIOCore
import NIOEmbedded

/// One dashboard session of an ``InProcessService``: requests go through the dashboard's
/// ``RPCGateway`` as its WebSocket's messages do; notifications are dropped.
package final class InProcessDashboard {
    private let gateway: RPCGateway
    private let connection: Connection
    private let channel: NIOAsyncTestingChannel

    init(gateway: RPCGateway) async throws {
        let channel = NIOAsyncTestingChannel()
        self.channel = channel
        self.gateway = gateway
        connection = gateway.open(channel, framing: DroppedMessages())
    }

    deinit { gateway.close(connection) }

    /// Sends request `method` with `params` and returns the reply.
    package func call(_ method: RPCMethod, _ params: MacroValue? = nil, id: Int = 1) async throws -> MacroValue {
        let request = RPCCodec.request(id: RPCID(json: String(id)), method: method.rawValue, params: params)
        guard let reply = try await gateway.handle(Array(request.text.utf8), from: connection).get() else { return .null }
        return try JSONParser.parse(reply.text)
    }
}

/// The dashboard session's notifications, dropped.
private struct DroppedMessages: MessageFraming {
    func write(_ message: RPCMessage, to channel: any Channel) {}
    func drained(_ channel: any Channel) -> EventLoopFuture<Void> { channel.eventLoop.makeSucceededVoidFuture() }
}
