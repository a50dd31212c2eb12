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
    private let maxInFlight: Int
    private let logger: Logger
    private var connection: Connection?
    private var inFlight = 0
    private var readHeld = false
    private var closing = false

    init(gateway: RPCGateway, maxInFlight: Int, logger: Logger) {
        self.gateway = gateway
        self.maxInFlight = maxInFlight
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
        switch frame.opcode {
        case .text, .binary:
            guard !closing, let connection else { return }
            var data = frame.unmaskedData
            let bytes = data.readBytes(length: data.readableBytes) ?? []
            if bytes.allSatisfy({ $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\n") || $0 == UInt8(ascii: "\t") }) { return }
            inFlight += 1
            let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            gateway.handle(bytes, from: connection).hop(to: context.eventLoop).whenComplete { result in
                let (session, context) = loopBound.value
                if case .success(let reply?) = result { WebSocketFraming().write(reply, to: context.channel) }
                session.inFlight -= 1
                if session.readHeld, session.inFlight < session.maxInFlight {
                    session.readHeld = false
                    context.read()
                }
            }
        case .ping:
            var payload = frame.unmaskedData
            let pong = WebSocketFrame(fin: true, opcode: .pong, data: payload.readSlice(length: payload.readableBytes) ?? context.channel.allocator.buffer(capacity: 0))
            context.writeAndFlush(wrapOutboundOut(pong), promise: nil)
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

    // Reads are requested by NIO (autoRead); hold them while too many requests are unanswered.
    func read(context: ChannelHandlerContext) {
        if inFlight >= maxInFlight {
            readHeld = true
            return
        }
        context.read()
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
}
