import Logging
import MacroDaemon
import MacroEngineCore
import MacroRPC
import NIOCore
import NIOWebSocket

/// One dashboard WebSocket: a connection of the daemon like a socket client. Each text message
/// is one JSON-RPC message (a request or a batch), handled by the same code as a socket line;
/// replies and subscribed notifications go back as text messages. Reading pauses while
/// `maxInFlight` requests are unanswered, and the hub drops a subscriber that leaves
/// `connection_buffer_bytes` unread, as on the socket.
///
/// What is written to the channel is bytes, as on the socket (so code that writes to any
/// connection works here too): each buffer becomes one text message; an empty one, which only
/// marks a point in the stream (the stall recovery's flush), an unsolicited pong.
final class WebSocketSession: ChannelDuplexHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = WebSocketFrame

    private let gateway: RPCGateway
    private let logger: Logger
    private var connection: Connection?
    /// In-flight gating, unsent replies and held reads, as on the socket. A pong on its way holds
    /// reads too (``RPCSessionState/heldByTransport``): more pings while it is unsent get none
    /// (RFC 6455 lets a server answer only the latest ping), so unread pongs cannot pile up.
    private var session: RPCSessionState
    private var closing = false

    init(gateway: RPCGateway, maxInFlight: Int, logger: Logger) {
        self.gateway = gateway
        session = RPCSessionState(maxInFlight: maxInFlight)
        self.logger = logger
    }

    func handlerAdded(context: ChannelHandlerContext) {
        connection = gateway.open(context.channel, framing: WebSocketFraming())
    }

    func channelInactive(context: ChannelHandlerContext) {
        if let connection { gateway.close(connection) }
        connection = nil
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        // RFC 6455, 5.1: a client's frames are masked, and a server closes the connection on an
        // unmasked one (1002, protocol error) without acting on it.
        guard frame.maskKey != nil else { return close(context: context, code: .protocolError) }
        switch frame.opcode {
        case .text, .binary:
            guard !closing, let connection else { return }
            var data = frame.unmaskedData
            let bytes = data.readBytes(length: data.readableBytes) ?? []
            if bytes.allSatisfy({ $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\n") || $0 == UInt8(ascii: "\t") }) { return }
            session.admitted()
            let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            gateway.handle(bytes, from: connection).whenComplete { result in
                let (handler, context) = loopBound.value
                _ = handler.session.answered()
                if case .success(let reply?) = result { handler.writeReply(reply, context: context) }
                handler.resumeReadingIfAllowed(context: context)
            }
        case .ping:
            guard !session.heldByTransport else { return }
            session.heldByTransport = true
            var payload = frame.unmaskedData
            let pong = WebSocketFrame(fin: true, opcode: .pong, data: payload.readSlice(length: payload.readableBytes) ?? context.channel.allocator.buffer(capacity: 0))
            let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            context.writeAndFlush(wrapOutboundOut(pong)).whenComplete { _ in
                let (handler, context) = loopBound.value
                handler.session.heldByTransport = false
                handler.resumeReadingIfAllowed(context: context)
            }
        case .connectionClose:
            close(context: context, code: .normalClosure)
        default:
            break
        }
    }

    /// Answers a close with a close, then hangs up.
    private func close(context: ChannelHandlerContext, code: WebSocketErrorCode) {
        guard !closing else { return }
        closing = true
        var buffer = context.channel.allocator.buffer(capacity: 2)
        buffer.write(webSocketErrorCode: code)
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .connectionClose, data: buffer))).whenComplete { _ in
            channel.close(promise: nil)
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let buffer = unwrapOutboundIn(data)
        context.write(wrapOutboundOut(WebSocketFrame(fin: true, opcode: buffer.readableBytes == 0 ? .pong : .text, data: buffer)), promise: promise)
    }

    /// Writes a reply as a text message and counts it until the kernel has taken it.
    private func writeReply(_ reply: RPCMessage, context: ChannelHandlerContext) {
        var buffer = context.channel.allocator.buffer(capacity: 256)
        reply.encode(into: &buffer)
        session.repliesUnsent(1)
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .text, data: buffer))).whenComplete { _ in
            let (handler, context) = loopBound.value
            handler.session.repliesSent(1)
            handler.resumeReadingIfAllowed(context: context)
        }
    }

    /// The same bounds as the Unix socket's (``RPCSessionState``), and `connection_buffer_bytes`
    /// of output waiting (the channel's high watermark): nothing more is read from this client.
    private func resumeReadingIfAllowed(context: ChannelHandlerContext) {
        if session.mayResume(writable: context.channel.isWritable), session.takeHeldRead() { context.read() }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        resumeReadingIfAllowed(context: context)
        context.fireChannelWritabilityChanged()
    }

    // Reads are requested by NIO (autoRead); hold them while the bounds above are reached.
    func read(context: ChannelHandlerContext) {
        if session.readRequested(writable: context.channel.isWritable) { context.read() }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        logger.debug("dashboard: WebSocket error: \(error)")
        close(context: context, code: .protocolError)
    }
}

/// A WebSocket connection's framing: each message is one text frame (made by ``WebSocketSession``).
struct WebSocketFraming: MessageFraming {
    func write(_ message: RPCMessage, to channel: any Channel) {
        var buffer = channel.allocator.buffer(capacity: 256)
        message.encode(into: &buffer)
        channel.writeAndFlush(buffer, promise: nil)
    }

    func drained(_ channel: any Channel) -> EventLoopFuture<Void> {
        channel.writeAndFlush(channel.allocator.buffer(capacity: 0))
    }
}
