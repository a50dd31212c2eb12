import NIOCore

/// The head of an adopted connection's pipeline (a socket handed over by an engine restart, or
/// accepted by the busy control while the engine was stuck): what the socket says now waits
/// until the bytes read for it before are fed (``Feed``). Without it, a client that sent its
/// requests and then half-closed lost them: the new channel saw the socket's end of input at
/// once, before its requests were fed, and closed with nothing in flight.
final class HandoverInput: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    /// The bytes read for this connection before it was adopted, fed as one read from the socket.
    struct Feed: Sendable {
        let bytes: [UInt8]
    }

    private var inputClosed = false

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let feed = event as? Feed {
            if !feed.bytes.isEmpty {
                var buffer = context.channel.allocator.buffer(capacity: feed.bytes.count)
                buffer.writeBytes(feed.bytes)
                context.fireChannelRead(wrapInboundOut(buffer))
                // As after a read from the socket: the requests it held are handed over.
                context.fireChannelReadComplete()
            }
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
