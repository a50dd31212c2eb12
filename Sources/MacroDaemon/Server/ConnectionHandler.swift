import Logging
import MacroEngineCore
import MacroRPC
import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// The peer's credentials (struct ucred: pid, uid, gid), read with SO_PEERCRED.
package struct PeerCredentials: Sendable, Equatable {
    package var pid: Int32 = 0
    package var uid: UInt32 = 0
    package var gid: UInt32 = 0

    package init(pid: Int32 = 0, uid: UInt32 = 0, gid: UInt32 = 0) {
        self.pid = pid
        self.uid = uid
        self.gid = gid
    }
}

/// One client connection: lines in, requests admitted by the router as they are decoded, each
/// reply out as soon as its request completes (completion order, matched by id; a batch's
/// replies stay together in its order). The engine jobs of one read go to the engine lane
/// together when the read completes (`channelReadComplete`: one hand-over to the engine per read,
/// not per request); their replies come back to ``receive(_:)`` (``ReplyRoute/connection(_:)``:
/// no promise per request) and are flushed once per segment of the batch's group commit; what
/// is answered off the engine is flushed once per read. Notifications a request causes
/// (`macro.console`, `progress.changed`) are written when they happen, so they may come before
/// that request's reply. Reads pause while `maxInFlight` requests of this connection are
/// unanswered, so a client that pipelines without reading cannot make the daemon buffer without bound.
final class ConnectionHandler: ChannelDuplexHandler, ReplyReceiver {
    typealias InboundIn = LineEvent
    /// What others write to the connection (notifications, owed bytes): encoded here, where the
    /// replies are, so every byte the client gets leaves this handler, in the order it was
    /// written: ``write(context:data:promise:)`` first writes the replies encoded before it.
    typealias OutboundIn = ConnectionOutput
    typealias OutboundOut = ByteBuffer

    private let host: EngineHost
    private let allowedUIDs: [UInt32]
    private let maxLineBytes: Int
    private let logger: Logger
    private var connection: Connection?
    /// In-flight gating, unsent replies, held reads and close-after-drain.
    private var session: RPCSessionState
    private var refused = false
    /// The engine jobs of the read in progress, handed over at `channelReadComplete`.
    private var jobs: [EngineJob] = []
    /// The read's requests answered off the engine (the control lane, errors), delivered when
    /// the read ends (``channelReadComplete(context:)``), after its jobs are handed over: not from inside
    /// `channelRead`, where a delivery that resumes reading would re-enter the decoder.
    private var answeredInRead: [RequestRouter.Admission] = []
    /// The handler's context, for the replies routed to it (``receive(_:)``).
    private var context: ChannelHandlerContext?
    /// The replies encoded since the last flush, written to the channel as one buffer when it
    /// flushes (sixteen pipelined replies are one write through the pipeline, not sixteen).
    private var replyBytes: ByteBuffer?
    /// Replies written since the last flush. Once flushed, those the kernel has not taken count
    /// in ``session`` as unsent: reads are held while there are `maxInFlight` of them, so a
    /// client that pipelines without reading holds at most that many replies (plus those of its
    /// requests in flight), however small they are, and never makes this loop parse and answer
    /// its whole backlog.
    private var unflushedReplies = 0
    /// The bytes of those replies (owed by the connection until the kernel takes them).
    private var unflushedBytes = 0
    /// Held lines are being decoded again (``resumeReadingIfAllowed(context:)``), and were asked
    /// for again meanwhile.
    private var resuming = false
    private var resumeAgain = false

    private let pendingInput: PendingInput
    private let adoptedSubscriptions: [EventKind]
    /// The connection's gate when it lives on the engine's loop (``BusyControl``).
    private let busyGate: BusyGate?
    /// The credentials a channel without `SO_PEERCRED` (a test's) stands for.
    private let assumedPeer: PeerCredentials?

    /// `pendingInput` is the line decoder's; `subscriptions` restores those of a connection handed
    /// over by an engine restart.
    init(
        host: EngineHost, allowedUIDs: [UInt32], maxLineBytes: Int, maxInFlight: Int, logger: Logger,
        pendingInput: PendingInput = PendingInput(), subscriptions: [EventKind] = [], busyGate: BusyGate? = nil, assumedPeer: PeerCredentials? = nil
    ) {
        self.assumedPeer = assumedPeer
        self.pendingInput = pendingInput
        self.busyGate = busyGate
        self.adoptedSubscriptions = subscriptions
        self.host = host
        session = RPCSessionState(maxInFlight: maxInFlight)
        self.allowedUIDs = allowedUIDs
        self.maxLineBytes = maxLineBytes
        self.logger = logger
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        let receiver = NIOLoopBound<any ReplyReceiver>(self, eventLoop: context.eventLoop)
        let connection = host.hub.register(context.channel, pendingInput: pendingInput, receiver: receiver)
        connection.peerIsOwner.store(false, ordering: .relaxed)
        // A socket's (a test's channel has no such option and must not be asked).
        if context.channel is any SocketOptionProvider, let mark = try? context.channel.syncOptions?.getOption(ChannelOptions.writeBufferWaterMark) {
            connection.owedLimit.store(mark.high, ordering: .relaxed)
        }
        if !adoptedSubscriptions.isEmpty { _ = connection.subscribe(adoptedSubscriptions) }
        self.connection = connection
        busyGate?.attach(connection, context: context)
    }

    func channelActive(context: ChannelHandlerContext) {
        checkPeer(context: context)
        context.fireChannelActive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        // The connection holds this handler as its reply receiver: dropping ours breaks the
        // cycle, so both are freed once the requests still in flight are answered.
        self.context = nil
        // Replies never flushed are owed no more.
        connection?.pay(unflushedBytes)
        unflushedBytes = 0
        connection = nil
    }

    func channelInactive(context: ChannelHandlerContext) {
        if let connection {
            // A last line decoded at EOF has no channelReadComplete after it.
            channelReadComplete(context: context)
            host.hub.unregister(connection)
            // Requests the lane held for it run now (their replies go nowhere).
            if connection.parked.load(ordering: .relaxed) { host.router.lane.resume(connection) }
        }
        context.fireChannelInactive()
    }

    private func checkPeer(context: ChannelHandlerContext) {
        guard let provider = context.channel as? any SocketOptionProvider else {
            connection?.peer.withLock { $0 = assumedPeer }
            return
        }
        if let connection {
            let cookie: EventLoopFuture<UInt64> = provider.unsafeGetSocketOption(level: SocketOptionLevel(SOL_SOCKET), name: SocketOptionName(SocketCookie.option))
            cookie.whenSuccess { connection.cookie.store($0, ordering: .relaxed) }
        }
        let future: EventLoopFuture<PeerCredentials> = provider.unsafeGetSocketOption(
            level: SocketOptionLevel(SOL_SOCKET), name: SocketOptionName(SO_PEERCRED))
        let own = getuid()
        let allowed = allowedUIDs
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        let connection = self.connection
        future.whenSuccess { credentials in
            connection?.peer.withLock { $0 = credentials }
            if credentials.uid == own { connection?.peerIsOwner.store(true, ordering: .relaxed) }
            guard credentials.uid != own, !allowed.contains(credentials.uid) else { return }
            let (handler, context) = loopBound.value
            handler.refuse(context: context, uid: credentials.uid)
        }
    }

    private func refuse(context: ChannelHandlerContext, uid: UInt32) {
        refused = true
        logger.warning("refused a connection from uid \(uid) (allowed: \(getuid())\(allowedUIDs.map { ", \($0)" }.joined()))")
        let error = RPCError(code: RPCError.forbidden, message: "connection refused: uid \(uid) is not allowed (config: allowed_uids)")
        write(RPCCodec.response(id: .null, error: error), context: context, flushNow: true)
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
            write(RPCCodec.response(id: .null, error: error), context: context, flushNow: true)
            refused = true
            closeGracefully(context: context)
        case .line(let line):
            if RPCCodec.isBlank(line) { return }
            switch RPCCodec.parse(line) {
            case .single(.failure(let failure)):
                write(RPCCodec.response(id: failure.id, error: failure.error), context: context)
            case .single(.success(let request)):
                session.admitted()
                let admission = host.router.admit(request, from: connection, jobs: &jobs, replyToConnection: true)
                if case .queued = admission {} else { answeredInRead.append(admission) }
                if !session.mayRead || !context.channel.isWritable { pendingInput.pause(true) }
                // Past the in-flight bound the read is held: hand over what this read brought so far.
                if session.inFlight >= session.maxInFlight { submitJobs() }
            case .batch(let items):
                // After the single requests before it, in arrival order.
                submitJobs()
                session.admitted()
                let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
                host.router.handle(batch: items, from: connection).whenComplete { result in
                    let (handler, context) = loopBound.value
                    if case .success(let reply?) = result { handler.write(reply, context: context) }
                    handler.end(context: context)
                    handler.flushCounting(context: context)
                }
            }
        }
    }

    /// The read ends: its jobs go to the engine lane in one go (one hand-over to the engine per
    /// read), then what was answered off the engine is delivered, and flushed once. Also where a
    /// read ends without this event: the connection closes, or the client half-closes (a last
    /// line decoded at EOF has no channelReadComplete after it); this handler is the pipeline's
    /// last, so the event it passes on is then heard by no one.
    func channelReadComplete(context: ChannelHandlerContext) {
        if !jobs.isEmpty {
            host.router.lane.submit(jobs)
            jobs = []
        }
        if !answeredInRead.isEmpty {
            let answered = answeredInRead
            answeredInRead = []
            for admission in answered {
                switch admission {
                case .queued: break
                case .answered(let reply): receive(reply)
                case .later(let future): answer(when: future, context: context)
                }
            }
        }
        flushCounting(context: context)
        context.fireChannelReadComplete()
    }

    /// Hands the engine jobs read so far to the engine lane, in one go (in the middle of a read).
    private func submitJobs() {
        guard !jobs.isEmpty else { return }
        host.router.lane.submit(jobs)
        jobs = []
    }

    /// A reply that waits for a future (the control lane's cancel, the debug lane, a request read
    /// while the engine restarts).
    /// The caller flushes after, which covers a future already complete (its callback runs at
    /// once); one that completes later flushes its own reply.
    private func answer(when future: EventLoopFuture<RPCMessage?>, context: ChannelHandlerContext) {
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        let immediate = NIOLoopBoundBox(true, eventLoop: context.eventLoop)
        future.whenComplete { result in
            let (handler, context) = loopBound.value
            if case .success(let reply?) = result { handler.write(reply, context: context) }
            handler.end(context: context)
            if !immediate.value { handler.flushCounting(context: context) }
        }
        immediate.value = false
    }

    /// A reply routed to this connection (``ReplyRoute/connection(_:)``), written without a flush:
    /// whoever delivers it flushes after (``flushReplies()``), once for all it delivered.
    func receive(_ reply: RPCMessage?) {
        guard let context else { return }
        if let reply {
            // Encoded here, as ``write(_:context:flushNow:)`` does (keep the two alike): the
            // reply path's last frame.
            unflushedReplies += 1
            if replyBytes == nil { replyBytes = context.channel.allocator.buffer(capacity: 256) }
            let before = replyBytes!.writerIndex
            reply.encodeLine(into: &replyBytes!)
            owe(replyBytes!.writerIndex - before)
        }
        end(context: context)
    }

    /// Flushes the replies ``receive(_:)`` wrote.
    func flushReplies() {
        guard let context else { return }
        flushCounting(context: context)
    }

    private func end(context: ChannelHandlerContext) {
        let closeNow = session.answered()
        resumeReadingIfAllowed(context: context)
        if closeNow {
            // Unflushed replies would be dropped by the close.
            flushCounting(context: context)
            context.close(promise: nil)
        }
    }

    /// A write from outside the handler (``Connection/send(_:)``, bytes owed after a restart or a
    /// takeover): the same way out as the replies.
    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        // The replies encoded before it go first.
        writeReplyBytes(context: context)
        switch unwrapOutboundIn(data) {
        case .message(let message): emit(message, context: context, promise: promise)
        case .bytes(let bytes): context.write(wrapOutboundOut(bytes), promise: promise)
        }
    }

    /// A notification as one line (`RPCMessage.encodeLine`, as the replies).
    private func emit(_ message: RPCMessage, context: ChannelHandlerContext, promise: EventLoopPromise<Void>?) {
        context.write(wrapOutboundOut(message.line(allocator: context.channel.allocator)), promise: promise)
    }

    /// Writes a reply, counted until flushed (``flushCounting(context:)``); ``receive(_:)`` does the
    /// same for the engine's replies, inline (a change here is a change there). Every writer flushes
    /// in the same event-loop turn: the read's own answers at `channelReadComplete`, the engine's
    /// replies when their batch ends (``ReplyOutbox``), so with io_thread: engine no reply waits
    /// behind the next task, which may be JavaScript that never comes back. `flushNow`: before a close.
    private func write(_ message: RPCMessage, context: ChannelHandlerContext, flushNow: Bool = false) {
        unflushedReplies += 1
        if replyBytes == nil { replyBytes = context.channel.allocator.buffer(capacity: 256) }
        let before = replyBytes!.writerIndex
        message.encodeLine(into: &replyBytes!)
        owe(replyBytes!.writerIndex - before)
        if flushNow { flushCounting(context: context) }
    }

    /// Counts `bytes` of replies as owed (``ReplyBudget``) until the kernel takes them.
    private func owe(_ bytes: Int) {
        unflushedBytes += bytes
        connection?.owe(bytes)
    }

    /// The kernel took `bytes` of replies: the engine lane may run the requests it held.
    private func paid(_ bytes: Int, by connection: Connection?) {
        guard let connection else { return }
        connection.pay(bytes)
        if connection.parked.load(ordering: .relaxed), !connection.mustWait() { host.router.lane.resume(connection) }
    }

    /// Writes the replies encoded so far to the channel, as one buffer.
    private func writeReplyBytes(context: ChannelHandlerContext) {
        guard let bytes = replyBytes else { return }
        replyBytes = nil
        context.write(wrapOutboundOut(bytes), promise: nil)
    }

    /// Flushes, and counts the replies flushed until the kernel has taken them: an empty write's
    /// promise completes once everything written before it has been (only when some is left).
    private func flushCounting(context: ChannelHandlerContext) {
        let count = unflushedReplies, bytes = unflushedBytes
        // Nothing of ours unflushed (notifications and owed bytes come with their own flush).
        guard count > 0 else { return }
        unflushedReplies = 0
        unflushedBytes = 0
        writeReplyBytes(context: context)
        context.flush()
        // The kernel took everything (the client reads): nothing to count, and no promise on
        // the common path. Otherwise the replies count until an empty write behind them completes.
        // The busy gate, when there is one, has just looked (one option read per flush, not two).
        let leftBytes = busyGate?.flushLeftBytes ?? ((try? context.channel.syncOptions?.getOption(ChannelOptions.bufferedWritableBytes)) ?? 1 > 0)
        guard leftBytes else { return paid(bytes, by: connection) }
        session.repliesUnsent(count)
        let sent = context.eventLoop.makePromise(of: Void.self)
        context.write(wrapOutboundOut(context.channel.allocator.buffer(capacity: 0)), promise: sent)
        context.flush()
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        // The connection is kept for the payment: the handler may be gone by then.
        let owner = connection
        sent.futureResult.whenComplete { _ in
            let (handler, context) = loopBound.value
            handler.session.repliesSent(count)
            handler.paid(bytes, by: owner)
            handler.resumeReadingIfAllowed(context: context)
        }
    }

    /// Reads were held (too many requests unanswered or replies unsent): read again once both allow.
    private func resumeReadingIfAllowed(context: ChannelHandlerContext) {
        // While the engine restarts, what is held stays where the restart hands it over (the
        // pending input, the socket): a line decoded now could miss the hand-over's snapshot.
        guard !host.router.restarting.load(ordering: .relaxed) else { return }
        guard session.mayResume(writable: context.channel.isWritable) else { return }
        if pendingInput.isPaused {
            // Called again from inside the decode below (a line answered at once ends its
            // request): the loop here decodes again once that pass returns, so thousands of
            // held lines never become thousands of nested frames (a stack overflow).
            if resuming { return resumeAgain = true }
            resuming = true
            defer { resuming = false }
            repeat {
                resumeAgain = false
                // Lines already read and not decoded yet come first: an empty read runs the decoder
                // over them (from the head of the pipeline, as bytes from the socket would).
                pendingInput.pause(false)
                context.pipeline.fireChannelRead(context.channel.allocator.buffer(capacity: 0))
                context.pipeline.fireChannelReadComplete()
            } while resumeAgain && pendingInput.isPaused && self.context != nil && session.mayResume(writable: context.channel.isWritable)
        }
        if !pendingInput.isPaused, session.takeHeldRead() { context.read() }
    }

    // Reads are requested by NIO (autoRead); hold them while too many requests are unanswered
    // or too many replies unsent.
    func read(context: ChannelHandlerContext) {
        // Held too while the channel is not writable (connection_buffer_bytes of output waiting).
        if session.readRequested(writable: context.channel.isWritable) { context.read() }
    }

    /// connection_buffer_bytes of output were waiting and the client read some: go on.
    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { resumeReadingIfAllowed(context: context) }
        context.fireChannelWritabilityChanged()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, event == .inputClosed {
            // The client half-closed: answer what it sent (its last line included), then close.
            if connection != nil { channelReadComplete(context: context) }
            if session.closeInput() {
                flushCounting(context: context)
                context.close(promise: nil)
            }
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        logger.debug("connection error: \(error)")
        context.close(promise: nil)
    }
}
