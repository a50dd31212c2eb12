import Logging
import MacroEngineCore
import MacroRPC
import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// The peer's credentials (struct ucred: pid, uid, gid), read with SO_PEERCRED.
struct PeerCredentials: Sendable {
    var pid: Int32 = 0
    var uid: UInt32 = 0
    var gid: UInt32 = 0
}

/// One client connection: lines in, requests to the engine host, each reply out as soon as its
/// request completes (completion order, matched by id; a batch's replies stay together in its
/// order). Notifications a request causes (`macro.console`, `progress.changed`) are written when
/// they happen, so they may come before that request's reply. Reads pause while `maxInFlight`
/// requests of this connection are unanswered, so a client that pipelines without reading cannot
/// make the daemon buffer without bound.
final class ConnectionHandler: ChannelDuplexHandler {
    typealias InboundIn = LineEvent
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let host: EngineHost
    private let allowedUIDs: [UInt32]
    private let maxLineBytes: Int
    private let logger: Logger
    private let maxInFlight: Int
    private var connection: Connection?
    private var inFlight = 0
    private var readHeld = false
    private var inputClosed = false
    private var refused = false

    private let pendingInput: PendingInput
    private let adoptedSubscriptions: [EventKind]

    /// `pendingInput` is the line decoder's; `subscriptions` restores those of a connection handed
    /// over by an engine restart.
    init(host: EngineHost, allowedUIDs: [UInt32], maxLineBytes: Int, maxInFlight: Int, logger: Logger,
         pendingInput: PendingInput = PendingInput(), subscriptions: [EventKind] = []) {
        self.pendingInput = pendingInput
        self.adoptedSubscriptions = subscriptions
        self.host = host
        self.maxInFlight = maxInFlight
        self.allowedUIDs = allowedUIDs
        self.maxLineBytes = maxLineBytes
        self.logger = logger
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let connection = host.hub.register(context.channel, pendingInput: pendingInput)
        if !adoptedSubscriptions.isEmpty { _ = connection.subscribe(adoptedSubscriptions) }
        self.connection = connection
    }

    func channelActive(context: ChannelHandlerContext) {
        checkPeer(context: context)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        if let connection { host.hub.unregister(connection) }
        context.fireChannelInactive()
    }

    private func checkPeer(context: ChannelHandlerContext) {
        guard let provider = context.channel as? any SocketOptionProvider else { return }
        if let connection {
            let cookie: EventLoopFuture<UInt64> = provider.unsafeGetSocketOption(level: SocketOptionLevel(SOL_SOCKET), name: SocketOptionName(SocketCookie.option))
            cookie.whenSuccess { connection.cookie.store($0, ordering: .relaxed) }
        }
        let future: EventLoopFuture<PeerCredentials> = provider.unsafeGetSocketOption(
            level: SocketOptionLevel(SOL_SOCKET), name: SocketOptionName(SO_PEERCRED))
        let own = getuid()
        let allowed = allowedUIDs
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        future.whenSuccess { credentials in
            guard credentials.uid != own, !allowed.contains(credentials.uid) else { return }
            let (handler, context) = loopBound.value
            handler.refuse(context: context, uid: credentials.uid)
        }
    }

    private func refuse(context: ChannelHandlerContext, uid: UInt32) {
        refused = true
        logger.warning("refused a connection from uid \(uid) (allowed: \(getuid())\(allowedUIDs.map { ", \($0)" }.joined()))")
        let error = RPCError(code: RPCError.forbidden, message: "connection refused: uid \(uid) is not allowed (config: allowed_uids)")
        write(RPCCodec.response(id: .null, error: error), context: context)
        closeGracefully(context: context)
    }

    /// Closes our side after the last reply, drops what the client still sends, and hangs up a
    /// second later: closing with unread input would reset the connection and lose the reply.
    private func closeGracefully(context: ChannelHandlerContext) {
        context.close(mode: .output, promise: nil)
        let channel = context.channel
        context.eventLoop.scheduleTask(in: .seconds(1)) { channel.close(promise: nil) }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !refused, let connection else { return }
        switch unwrapInboundIn(data) {
        case .tooLong:
            let error = RPCError(code: RPCError.invalidRequest, message: "Invalid Request: line longer than \(maxLineBytes) bytes (config: max_line_bytes); closing")
            write(RPCCodec.response(id: .null, error: error), context: context)
            refused = true
            closeGracefully(context: context)
        case .line(let bytes):
            if RPCCodec.isBlank(bytes) { return }
            handle(RPCCodec.parse(bytes), connection: connection, context: context)
        }
    }

    private func handle(_ line: RPCLine, connection: Connection, context: ChannelHandlerContext) {
        let loop = context.eventLoop
        let loopBound = NIOLoopBound((self, context), eventLoop: loop)
        switch line {
        case .single(.failure(let failure)):
            write(RPCCodec.response(id: failure.id, error: failure.error), context: context)
        case .single(.success(let request)):
            begin()
            host.handle(request, from: connection).hop(to: loop).whenComplete { result in
                let (handler, context) = loopBound.value
                if case .success(let reply?) = result { handler.write(reply, context: context) }
                handler.end(context: context)
            }
        case .batch(let items):
            begin()
            let futures: [EventLoopFuture<RPCMessage?>] = items.map { item in
                switch item {
                case .failure(let failure): return loop.makeSucceededFuture(RPCCodec.response(id: failure.id, error: failure.error))
                case .success(let request): return host.handle(request, from: connection)
                }
            }
            EventLoopFuture.whenAllComplete(futures, on: loop).whenComplete { result in
                let (handler, context) = loopBound.value
                if case .success(let results) = result {
                    let replies = results.compactMap { try? $0.get() }.compactMap { $0 }
                    if !replies.isEmpty { handler.write(RPCMessage(batch: replies), context: context) }
                }
                handler.end(context: context)
            }
        }
    }

    private func begin() {
        inFlight += 1
    }

    private func end(context: ChannelHandlerContext) {
        inFlight -= 1
        if readHeld, inFlight < maxInFlight {
            readHeld = false
            context.read()
        }
        if inputClosed, inFlight == 0 { context.close(promise: nil) }
    }

    private func write(_ message: RPCMessage, context: ChannelHandlerContext) {
        var buffer = context.channel.allocator.buffer(capacity: message.text.utf8.count + 1)
        buffer.writeString(message.text)
        buffer.writeInteger(UInt8(ascii: "\n"))
        context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
    }

    // Reads are requested by NIO (autoRead); hold them while too many requests are unanswered.
    func read(context: ChannelHandlerContext) {
        if inFlight >= maxInFlight {
            readHeld = true
            return
        }
        context.read()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, event == .inputClosed {
            // The client half-closed: answer what it sent, then close.
            inputClosed = true
            if inFlight == 0 { context.close(promise: nil) }
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        logger.debug("connection error: \(error)")
        context.close(promise: nil)
    }
}
