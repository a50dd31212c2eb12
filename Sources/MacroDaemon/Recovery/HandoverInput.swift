import NIOCore

/// The head of an adopted connection's pipeline (a socket handed over by an engine restart, or
/// accepted by the busy control while the engine was stuck): nothing the socket says now goes on
/// before the bytes read for it earlier are fed (``Feed``). What arrives first waits here: reads
/// (NIO reads what is left in the kernel when it sees the end of input, even with autoRead off)
/// and the end of input. Without it, a client that sent its requests and then half-closed lost
/// them (the new channel saw the end of input at once and closed with nothing in flight), and a
/// line cut by the restart could arrive tail first.
final class HandoverInput: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    /// The bytes read for this connection before it was adopted, fed as one read from the socket.
    struct Feed: Sendable {
        let bytes: [UInt8]
    }

    /// Reads that came before the feed, in order.
    private var early: [ByteBuffer] = []
    private var inputClosed = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        early.append(unwrapInboundIn(data))
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        // The feed completes the read, after the earlier bytes.
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let feed = event as? Feed {
            var read = false
            if !feed.bytes.isEmpty {
                var buffer = context.channel.allocator.buffer(capacity: feed.bytes.count)
                buffer.writeBytes(feed.bytes)
                context.fireChannelRead(wrapInboundOut(buffer))
                read = true
            }
            for buffer in early { context.fireChannelRead(wrapInboundOut(buffer)) }
            read = read || !early.isEmpty
            early = []
            // As after a read from the socket: the requests it held are handed over.
            if read { context.fireChannelReadComplete() }
            if inputClosed { context.fireUserInboundEventTriggered(ChannelEvent.inputClosed) }
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
            return
        }
        if let event = event as? ChannelEvent, event == .inputClosed {
            // The client's end of input comes after what it sent before.
            inputClosed = true
            return
        }
        context.fireUserInboundEventTriggered(event)
    }
}
