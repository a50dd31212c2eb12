import Foundation
import Logging
import MacroEngineCore
import MacroRPC
import NIOCore
import NIOPosix
import ServiceLifecycle
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The Unix socket: binds it (or listens on the socket a stalled macrod handed over), adopts the
/// connections handed over with it, and tells systemd macrod is ready. At graceful shutdown it
/// stops accepting, lets calls in flight finish within `shutdown_grace_ms`, and drains their
/// replies; a request still running past that gets an answer, not an EOF.
final class SocketListenerService: DaemonService {
    private let config: MacroConfig
    private let socketPath: String
    private let version: String
    private let statePath: String
    private let host: EngineHost
    private let group: MultiThreadedEventLoopGroup
    private let busyControl: BusyControl?
    private let recovery: StallRecovery
    private let handover: Handover?
    private let notifier: SystemdNotifier
    private let logger: Logger
    private let pipeline: ClientPipeline
    private let server = Mutex<(any Channel)?>(nil)
    /// The stall recovery was asked to end the shutdown (``hurryIfStuck()``), once.
    private let hurried = Atomic<Bool>(false)

    /// Serves `host` on `socketPath` with the connections on `group` (its one loop is the
    /// engine's with `io_thread: engine`).
    init(
        config: MacroConfig, socketPath: String, version: String, statePath: String, host: EngineHost, group: MultiThreadedEventLoopGroup,
        busyControl: BusyControl?, recovery: StallRecovery, handover: Handover?, notifier: SystemdNotifier, logger: Logger
    ) {
        self.config = config
        self.socketPath = socketPath
        self.version = version
        self.statePath = statePath
        self.host = host
        self.group = group
        self.busyControl = busyControl
        self.recovery = recovery
        self.handover = handover
        self.notifier = notifier
        self.logger = logger
        pipeline = ClientPipeline(
            host: host, allowedUIDs: config.allowedUIDs, maxLineBytes: config.maxLineBytes,
            maxInFlight: config.connectionInFlight, busyControl: busyControl, logger: logger)
    }

    /// Listens, adopts the handed-over connections, then sends `READY=1`. Throws
    /// ``MacroDaemonError`` (`bind`) when it cannot listen.
    func start() async throws {
        let group = group, buffer = config.connectionBufferBytes, pipeline = pipeline
        /// An adopted connection's pipeline: it reads nothing until ``resume(_:feeding:)``.
        let setUp: @Sendable (any Channel, [EventKind]) -> EventLoopFuture<Void> = { channel, subscriptions in
            channel.eventLoop.makeCompletedFuture { try pipeline.install(on: channel, subscriptions: subscriptions, adopted: true) }
        }
        busyControl?.setAdopter { [busyControl] client in
            // On the engine's loop, when the entry that kept it busy ended.
            Self.adoptingBootstrap(group: group, buffer: buffer) { setUp($0, []) }
                .withConnectedSocket(client.fd)
                .whenComplete { result in
                    guard busyControl?.finishAdopting(client) ?? true else { return }
                    guard case .success(let channel) = result else {
                        client.close()
                        return
                    }
                    let (input, output) = client.adopted(by: channel)
                    if !output.isEmpty {
                        var bytes = channel.allocator.buffer(capacity: output.count)
                        bytes.writeBytes(output)
                        channel.writeAndFlush(ConnectionOutput.bytes(bytes), promise: nil)
                    }
                    Self.resume(channel, feeding: input)
                }
        }
        // The socket is created 0600 (no window in which it has another mode).
        umask(0o177)
        do {
            let recovery = recovery
            let bootstrap = ServerBootstrap(group: group)
                // The listener's cookie, read on its loop before it listens (the option completes at
                // once there): the busy control finds the listener by it. Read after the bind, it
                // was a task of the engine's loop (io_thread: engine), which a client's first call
                // could keep busy forever: then nobody new was accepted during that stall.
                .serverChannelInitializer { channel in
                    if let provider = channel as? any SocketOptionProvider {
                        let cookie: EventLoopFuture<UInt64> = provider.unsafeGetSocketOption(
                            level: SocketOptionLevel(SOL_SOCKET), name: SocketOptionName(SocketCookie.option))
                        cookie.whenSuccess { recovery.listenerCookie.store($0, ordering: .relaxed) }
                    }
                    return channel.eventLoop.makeSucceededVoidFuture()
                }
                .serverChannelOption(.backlog, value: 256)
                .childChannelOption(.allowRemoteHalfClosure, value: true)
                .childChannelOption(.writeBufferWaterMark, value: .init(low: buffer / 4, high: buffer))
                .childChannelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture { try pipeline.install(on: channel) }
                }
            let server: any Channel
            if let listener = handover?.listener {
                server = try await bootstrap.withBoundSocket(listener).get()
            } else {
                server = try await bootstrap.bind(unixDomainSocketPath: socketPath, cleanupExistingSocketFile: false).get()
            }
            self.server.withLock { $0 = server }
            recovery.listener.locked { $0 = server }
            if recovery.listenerCookie.load(ordering: .relaxed) == 0, let provider = server as? any SocketOptionProvider {
                let cookie: UInt64 = try await provider.unsafeGetSocketOption(
                    level: SocketOptionLevel(SOL_SOCKET), name: SocketOptionName(SocketCookie.option)
                ).get()
                recovery.listenerCookie.store(cookie, ordering: .relaxed)
            }
        } catch {
            umask(0o077)
            throw MacroDaemonError(code: .bind, message: "cannot listen on \(socketPath): \(error)")
        }
        umask(0o077)
        logger.info(
            "macrod \(version) listening on \(socketPath)",
            metadata: [
                "macros": "\(config.macrosDirectory)", "state": "\(statePath)", "pid": "\(getpid())",
            ])
        if let handover {
            let elapsed = Int((Date().timeIntervalSince1970 - handover.stalledAt) * 1000)
            logger.warning(
                "engine restarted after a stall; serving again \(elapsed) ms after it was noticed, with \(handover.clients.count) connection(s) kept",
                metadata: [
                    "reason": "\(handover.reason)", "restarts": "\(handover.restarts.count)",
                ])
        }
        // Logged before the kept connections are served again, so that the log says so before
        // any of them is answered.
        await adopt(handover?.clients ?? [], buffer: buffer, setUp: setUp)
        notifier.notify("READY=1\nSTATUS=listening on \(socketPath)")
    }

    /// Accepts until graceful shutdown; returns by itself when a shutdown was carried over an
    /// engine restart (it serves what was handed over, then stops).
    func serve() async {
        guard let server = server.withLock({ $0 }) else { return }
        let recovery = recovery
        // A shutdown that began before the restart goes on here: serve what was handed over
        // (within the grace period), then stop.
        if handover?.shuttingDown ?? false {
            recovery.shutdownRequested.store(true, ordering: .relaxed)
            logger.info("a shutdown began before the engine restart: shutting down")
            server.close(promise: nil)
        }
        await withGracefulShutdownHandler {
            try? await server.closeFuture.get()
        } onGracefulShutdown: { [self] in
            recovery.shutdownRequested.store(true, ordering: .relaxed)
            server.close(promise: nil)
            // With `io_thread: engine` the listener closes on the engine's loop: a loop stuck in
            // JavaScript never gets to it, and ``stop()`` is never reached. So the grace is
            // also timed from here.
            let grace = config.shutdownGrace
            Task { [self] in
                try? await Task.sleep(for: grace)
                hurryIfStuck()
            }
        }
    }

    /// Past the shutdown's grace period with a request still in flight and the engine inside
    /// JavaScript (a call the watchdog cannot stop, or one whose budget is longer than the
    /// grace): the stall recovery acts now, answering what is in flight and carrying the
    /// shutdown over to a new process that only finishes it, instead of after the call's budget
    /// plus stall_grace_ms. True when it was asked to.
    @discardableResult
    private func hurryIfStuck() -> Bool {
        guard host.pending > 0, host.engine.occupancy.snapshot.since != nil else { return false }
        if !hurried.exchange(true, ordering: .relaxed) {
            logger.warning("shutting down: the engine is still inside JavaScript after shutdown_grace_ms; restarting it to stop")
            recovery.hurry()
        }
        return true
    }

    /// Accepting has stopped: lets calls in flight finish within the grace period, and drains
    /// their replies; past it, answers what is still in flight.
    func stop() async {
        let hub = host.hub, engine = host.engine
        logger.info("shutting down: waiting up to \(config.shutdownGrace) for \(host.pending) call(s) in flight")
        let deadline = ContinuousClock.now + config.shutdownGrace
        while host.pending > 0, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(5))
        }
        // The stall recovery replaces this process; should the JavaScript end by itself first,
        // the shutdown goes on here.
        if hurryIfStuck() {
            while engine.occupancy.snapshot.since != nil { try? await Task.sleep(for: .milliseconds(5)) }
        }
        if host.pending == 0 {
            await Self.drainReplies(engine: engine.eventLoop, connections: hub.all.map(\.channel.eventLoop))
        } else {
            // Past the grace period: every request still in flight gets an answer, not an EOF.
            let error = RPCError(
                code: RPCError.engineRestarted,
                message: "macrod is shutting down: this request did not finish within shutdown_grace_ms; nothing of it was kept; send it again when macrod is back")
            for entry in host.inFlight.takeAll() { entry.route.deliver(entry.id.map { RPCCodec.response(id: $0, error: error) }) }
            // Written and flushed on the connections' loops (the engine's may still be stuck).
            var loops: [ObjectIdentifier: any EventLoop] = [:]
            for connection in hub.all where connection.channel.eventLoop !== engine.eventLoop {
                loops[ObjectIdentifier(connection.channel.eventLoop)] = connection.channel.eventLoop
            }
            for loop in loops.values {
                for _ in 0..<2 { _ = try? await loop.submit {}.get() }
            }
        }
    }

    /// The last replies are still on their way when the last request stops counting: the batch
    /// that finished them releases them at its end (a group commit), written and flushed at once
    /// on the engine's loop, or as one task for each other connection loop. So: one turn of the
    /// engine's loop, then two of each connection loop (one more than needed), before anything closes.
    static func drainReplies(engine: any EventLoop, connections: [any EventLoop]) async {
        _ = try? await engine.submit {}.get()
        var loops: [ObjectIdentifier: any EventLoop] = [:]
        for loop in connections { loops[ObjectIdentifier(loop)] = loop }
        for _ in 0..<2 {
            for loop in loops.values { _ = try? await loop.submit {}.get() }
        }
    }

    /// Takes over a client connection handed over by a restart: same pipeline, its subscriptions,
    /// and the bytes of an unfinished line fed in before anything new is read.
    private func adopt(
        _ clients: [Handover.Client], buffer: Int, setUp: @escaping @Sendable (any Channel, [EventKind]) -> EventLoopFuture<Void>
    ) async {
        // Every socket first, then the bytes: fed before all were adopted, a handed-over call
        // could stall the engine again (with `io_thread: engine` it runs on the same loop) and
        // leave the rest unadopted, to be closed at the next restart.
        var adopted: [(channel: any Channel, pending: [UInt8])] = []
        for client in clients {
            let subscriptions = client.subscriptions.compactMap(EventKind.init(rawValue:))
            do {
                let channel = try await Self.adoptingBootstrap(group: group, buffer: buffer) { setUp($0, subscriptions) }
                    .withConnectedSocket(client.fd)
                    .get()
                adopted.append((channel, client.pendingInput))
            } catch {
                logger.warning("could not keep a connection across the engine restart: \(error)")
                close(client.fd)
            }
        }
        // All in one task of their loop, before any request they bring runs.
        let fed = adopted
        guard let loop = fed.first?.channel.eventLoop else { return }
        do {
            try await loop.submit {
                for (channel, pending) in fed { Self.resume(channel, feeding: pending) }
            }.get()
        } catch {
            logger.warning("could not feed the connections kept across the engine restart: \(error)")
        }
    }

    /// A bootstrap for a socket macrod already holds (handed over by a restart, or accepted by
    /// the busy control): the connection's pipeline, reading off until ``resume(_:feeding:)``.
    static func adoptingBootstrap(
        group: MultiThreadedEventLoopGroup, buffer: Int,
        initializer: @escaping @Sendable (any Channel) -> EventLoopFuture<Void>
    ) -> ClientBootstrap {
        ClientBootstrap(group: group)
            .channelOption(.autoRead, value: false)
            .channelOption(.allowRemoteHalfClosure, value: true)
            .channelOption(.writeBufferWaterMark, value: .init(low: buffer / 4, high: buffer))
            .channelInitializer(initializer)
    }

    /// Feeds an adopted connection what was read for it before, then lets it read (its loop).
    static func resume(_ channel: any Channel, feeding pending: [UInt8]) {
        // Before anything the socket says now (its end of input included): ``HandoverInput``.
        ClientPipeline.feed(channel, pending)
        channel.setOption(.autoRead, value: true).whenFailure { _ in }
    }
}
