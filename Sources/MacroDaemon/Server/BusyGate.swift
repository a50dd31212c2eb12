import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// The first handler of a connection on the engine's loop, next to the socket: while
/// ``BusyControl`` holds the connection (the engine is busy in JavaScript), what the engine
/// writes goes to the control thread's outbox instead of the socket, a flush does nothing and a
/// close waits; when the connection is handed back, what the control thread read for the engine
/// comes first in the pipeline, before anything the channel reads afterwards, and what it could
/// not write goes first to the socket, before anything the engine writes afterwards.
///
/// No NIO call is ever made under the link's lock (NIO runs pipeline code inline: a flush that
/// fails reads the socket and fires events that flush again). The flush and the takeover meet
/// through two flags instead (``BusyLink/flushing`` and ``BusyLink/isHeld``, Dekker-style).
final class BusyGate: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let control: BusyControl
    private var link: BusyLink?
    private var context: ChannelHandlerContext?
    /// Whether the last flush left bytes the kernel did not take (read by ``ConnectionHandler``
    /// right after its flush, which runs through this gate: one option read per flush).
    private(set) var flushLeftBytes = false
    /// Closes asked for while the connection was held.
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
        // The link holds this gate: dropping ours breaks the cycle, so both are freed.
        link = nil
        self.context = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        feedHandedBack(context: context, complete: false)
        context.fireChannelRead(data)
    }

    func channelInactive(context: ChannelHandlerContext) {
        feedHandedBack(context: context, complete: true)
        context.fireChannelInactive()
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard let link else {
            context.write(data, promise: promise)
            return
        }
        let buffer = unwrapOutboundIn(data)
        let queued = link.state.locked { state -> Bool in
            guard link.isHeld else { return false }
            state.outbox += buffer.readableBytesView
            return true
        }
        if queued {
            promise?.succeed(())
            return
        }
        writeHandedBack(context: context)
        context.write(data, promise: promise)
    }

    func flush(context: ChannelHandlerContext) {
        guard let link else {
            context.flush()
            flushLeftBytes = Self.buffered(context)
            return
        }
        // Announce the flush, then look: a takeover that starts now sees it and does not write
        // to this socket until the hand-back (a line may be half written).
        link.flushing.store(true, ordering: .sequentiallyConsistent)
        defer { link.flushing.store(false, ordering: .sequentiallyConsistent) }
        guard !link.isHeld else {
            flushLeftBytes = false
            return
        }
        writeHandedBack(context: context)
        context.flush()
        noteHalfWritten(context: context, link: link)
    }

    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        // The control thread uses the descriptor until the hand-back: it must not be closed
        // (and reused) under it.
        if let link, link.isHeld {
            if let waiting = closeWaiting {
                if let promise { waiting.promise?.futureResult.cascade(to: promise) }
            } else {
                closeWaiting = (mode, promise)
            }
            return
        }
        context.close(mode: mode, promise: promise)
    }

    /// The engine's loop, after the entry (a task of its own, not inside the entry's end):
    /// the bytes kept for it and its unwritten output, then a close that waited.
    func handBack() {
        guard let context else { return }
        feedHandedBack(context: context, complete: true)
        if let link, !link.isHeld {
            writeHandedBack(context: context)
            context.flush()
            noteHalfWritten(context: context, link: link)
        }
        if let waiting = closeWaiting {
            closeWaiting = nil
            context.close(mode: waiting.mode, promise: waiting.promise)
        }
    }

    /// What the control thread read for the engine, ahead of anything read after it.
    private func feedHandedBack(context: ChannelHandlerContext, complete: Bool) {
        guard let link, let input = link.state.locked({ $0.takeHandedBackInput() }) else { return }
        var buffer = context.channel.allocator.buffer(capacity: input.count)
        buffer.writeBytes(input)
        context.fireChannelRead(NIOAny(buffer))
        if complete { context.fireChannelReadComplete() }
    }

    /// What the control thread could not write (maybe the rest of a line), ahead of any write.
    private func writeHandedBack(context: ChannelHandlerContext) {
        guard let link, let output = link.state.locked({ $0.takeHandedBackOutput() }) else { return }
        var buffer = context.channel.allocator.buffer(capacity: output.count)
        buffer.writeBytes(output)
        context.write(NIOAny(buffer), promise: nil)
    }

    /// After a flush: bytes the kernel did not take mean a line may be half written; the flag
    /// clears once NIO has written everything (watched through an empty write, one at a time).
    private func noteHalfWritten(context: ChannelHandlerContext, link: BusyLink) {
        flushLeftBytes = Self.buffered(context)
        guard flushLeftBytes else {
            link.halfWritten.store(false, ordering: .relaxed)
            return
        }
        guard !link.halfWritten.exchange(true, ordering: .relaxed) else { return }
        watchDrain(context: context, link: link)
    }

    private func watchDrain(context: ChannelHandlerContext, link: BusyLink) {
        let drained = context.eventLoop.makePromise(of: Void.self)
        context.writeAndFlush(NIOAny(context.channel.allocator.buffer(capacity: 0)), promise: drained)
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        drained.futureResult.whenComplete { result in
            let (gate, context) = bound.value
            if case .success = result, Self.buffered(context) {
                gate.watchDrain(context: context, link: link)
            } else {
                link.halfWritten.store(false, ordering: .relaxed)
            }
        }
    }

    private static func buffered(_ context: ChannelHandlerContext) -> Bool {
        ((try? context.channel.syncOptions?.getOption(ChannelOptions.bufferedWritableBytes)) ?? 0) > 0
    }
}
