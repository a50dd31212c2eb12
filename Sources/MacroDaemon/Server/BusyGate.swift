import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// The first handler of a connection on the engine's loop, next to the socket: while
/// ``BusyControl`` holds the connection (the engine is busy in JavaScript), what the engine
/// writes goes to the control thread's outbox instead of the socket, and a close waits; when the
/// connection is handed back, what the control thread read for the engine comes first in the
/// pipeline, before anything the channel reads afterwards.
final class BusyGate: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let control: BusyControl
    private var link: BusyLink?
    private var context: ChannelHandlerContext?
    /// Read for the engine by the control thread, not yet given to the pipeline.
    private var handedBack: [UInt8] = []
    /// A close asked for while the connection was held.
    private var closeWaiting: (mode: CloseMode, promise: EventLoopPromise<Void>?)?

    init(control: BusyControl) { self.control = control }

    /// Joins the busy control once the connection is known (``ConnectionHandler`` registers it).
    func attach(_ connection: Connection, context: ChannelHandlerContext) {
        let link = BusyLink(connection: connection, gate: NIOLoopBound(self, eventLoop: context.eventLoop))
        self.link = link
        // The cookie finds the descriptor (NIO does not expose it). Read here, on the loop, where
        // the option call completes at once: a channel accepted in the same wake-up as a long
        // macro call becomes active only after that call, too late for a takeover during it.
        if connection.cookie.load(ordering: .relaxed) == 0, let provider = context.channel as? any SocketOptionProvider {
            let cookie: EventLoopFuture<UInt64> = provider.unsafeGetSocketOption(
                level: SocketOptionLevel(SOL_SOCKET), name: SocketOptionName(SocketCookie.option))
            cookie.whenSuccess { connection.cookie.store($0, ordering: .relaxed) }
        }
        control.register(link)
    }

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    func handlerRemoved(context: ChannelHandlerContext) {
        if let link { control.unregister(link.connection.id) }
        self.context = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if !handedBack.isEmpty { fireHandedBack(context: context) }
        context.fireChannelRead(data)
    }

    func channelInactive(context: ChannelHandlerContext) {
        if !handedBack.isEmpty { fireHandedBack(context: context) }
        context.fireChannelInactive()
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard let link, link.isHeld else {
            context.write(data, promise: promise)
            return
        }
        let buffer = unwrapOutboundIn(data)
        link.state.locked { $0.outbox += buffer.readableBytesView }
        promise?.succeed(())
    }

    func flush(context: ChannelHandlerContext) {
        guard let link else {
            context.flush()
            return
        }
        // Under the link's lock, so the control thread never takes the connection over while
        // the socket is being written, and knows whether a line is half written.
        link.state.locked { state in
            guard !link.isHeld else { return }
            context.flush()
            state.halfWritten = ((try? context.channel.syncOptions?.getOption(ChannelOptions.bufferedWritableBytes)) ?? 0) > 0
        }
    }

    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        // The control thread uses the descriptor until the hand-back: it must not be closed
        // (and reused) under it.
        if let link, link.isHeld {
            closeWaiting = (mode, promise)
            return
        }
        context.close(mode: mode, promise: promise)
    }

    /// The engine's loop, after the entry: see ``BusyLink/handBack(input:output:)``.
    func handBack(input: [UInt8], output: [UInt8]) {
        guard let context else { return }
        if !output.isEmpty {
            var buffer = context.channel.allocator.buffer(capacity: output.count)
            buffer.writeBytes(output)
            context.writeAndFlush(NIOAny(buffer), promise: nil)
        }
        if !input.isEmpty {
            handedBack += input
            // Fed at the next read, or now if none comes first.
            let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
            context.eventLoop.execute {
                let gate = bound.value
                if let context = gate.context, !gate.handedBack.isEmpty { gate.fireHandedBack(context: context) }
            }
        }
        if let waiting = closeWaiting {
            closeWaiting = nil
            context.close(mode: waiting.mode, promise: waiting.promise)
        }
    }

    private func fireHandedBack(context: ChannelHandlerContext) {
        var buffer = context.channel.allocator.buffer(capacity: handedBack.count)
        buffer.writeBytes(handedBack)
        handedBack = []
        context.fireChannelRead(NIOAny(buffer))
        context.fireChannelReadComplete()
    }
}
