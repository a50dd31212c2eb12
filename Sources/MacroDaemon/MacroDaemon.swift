import Foundation
import Logging
import MacroEngineCore
import MacroRPC
import NIOCore
import NIOPosix
import ServiceLifecycle
import Synchronization
import UnixSignals

#if canImport(Glibc)
import Glibc
#endif

/// macrod: the engine and the progress model behind a Unix socket (JSON-RPC 2.0, one JSON text
/// per line), with live reload of the macros directory. A swift-service-lifecycle `Service`:
/// on graceful shutdown (SIGTERM/SIGINT) it stops accepting, lets calls in flight finish within
/// the grace period, writes the state, removes the socket file and returns. SIGHUP re-reads the
/// config and rescans the macros.
public final class MacroDaemon: Service, Sendable {
    /// The settings macrod started with.
    public let config: MacroConfig
    /// The socket path.
    public let socketPath: String
    /// The config file to re-read on SIGHUP (nil: none).
    public let configFile: String?
    /// The version reported by engine.status.
    public let version: String
    private let logger: Logger
    private let hub = NotificationHub()
    private let debounce: TimeAmount = .milliseconds(15)
    private let frontends: [any DaemonFrontend]

    /// Creates the daemon; nothing starts until ``run()``. `logger`'s handler also receives
    /// nothing extra: log subscribers are fed by a handler added here.
    public convenience init(config: MacroConfig, socketPath: String, configFile: String?, version: String, logger: Logger) {
        self.init(config: config, socketPath: socketPath, configFile: configFile, version: version, logger: logger, frontends: [])
    }

    /// Creates the daemon with listeners beside the socket (the dashboard), started once the
    /// socket listens.
    package init(config: MacroConfig, socketPath: String, configFile: String?, version: String, logger: Logger, frontends: [any DaemonFrontend]) {
        self.frontends = frontends
        self.config = config
        self.socketPath = socketPath
        self.configFile = configFile
        self.version = version
        let base = logger
        let hub = hub
        var combined = Logger(label: base.label) { _ in
            MultiplexLogHandler([base.handler, HubLogHandler(hub: hub, logLevel: base.logLevel)])
        }
        combined.logLevel = base.logLevel
        self.logger = combined
    }

    /// Runs until graceful shutdown. Throws ``MacroDaemonError`` when it cannot start.
    public func run() async throws {
        // The user's umask decides the mode of macro files macrod creates (macro.save); a
        // re-executed macrod (engine restart) inherits it from the first one's environment.
        let userUmask = FileMode.userUmask(current: umask(0o077))
        DescriptorLimit.raise()
        // Started by a stalled macrod re-executing itself: its sockets and quarantine come along.
        let handover = Handover.take()
        let notifier = SystemdNotifier()
        do {
            try SocketPath.prepareDirectory(for: socketPath)
        } catch {
            throw MacroDaemonError(code: .permission, message: error.description)
        }
        if handover?.listener == nil { try Self.clearStaleSocket(socketPath) }

        // io_thread: engine — the connections share the engine's loop (no hand-off per request).
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let environment = try EngineEnvironment(
            config: config, name: "macrod", eventLoop: config.ioThread == .engine ? group.next() : nil, logger: logger)
        let engine = environment.engine, model = environment.model, store = environment.store, library = environment.library
        restoreState(environment)
        let host = EngineHost(
            engine: engine, model: model, library: library, store: store, hub: hub,
            settings: .init(
                engineEval: config.engineEval, queueLimit: config.queueLimit, socket: socketPath, fsync: config.fsync,
                newFileMode: FileMode.newFile(umask: userUmask)),
            version: version, logger: logger)
        if let handover { host.metrics.restarts.increment(by: handover.totalRestarts) }
        host.persistence.checkWritable()
        // The last line of defence, watching from its own thread from the first file loaded on.
        let recovery = StallRecovery(
            host: host, library: library, hub: hub, previous: handover, stallQuarantine: config.stallQuarantine, logger: logger)
        // Connections on the engine's thread: a thread of their own serves their control
        // requests while JavaScript keeps the engine busy.
        let busyControl: BusyControl? =
            config.ioThread == .engine
            ? BusyControl(
                occupancy: engine.occupancy, engine: engine, control: host.router.control, publisher: host.publisher,
                allowedUIDs: config.allowedUIDs, listenerCookie: { recovery.listenerCookie.load(ordering: .relaxed) }, logger: logger)
            : nil
        recovery.busyControl.locked { $0 = busyControl }
        let stallWatch = StallWatch(
            occupancy: engine.occupancy, grace: config.stallGrace, memoryCeiling: (config.memoryLimitMB << 20) / 2 * 3,
            onTick: { healthy in notifier.heartbeat(healthy: healthy) },
            onMemoryNotBlamed: { [logger] resident in
                logger.warning(
                    "the process is at \(resident >> 20) MiB, past 1.5 x memory_limit_mb, but the JavaScript running now did not grow it (memory outside JavaScript: connections' buffers?); no call is blamed and the engine is not restarted"
                )
            },
            onStall: { recovery.recover($0) })
        defer { stallWatch.stop() }
        if let handover {
            library.setQuarantine(handover.quarantine)
            if handover.paused {
                engine.pauseJavaScript(
                    reason:
                        "the engine stalled more than \(StallRecovery.budget) times within \(Int(StallRecovery.budgetWindow)) s in code no macro file answers for (\(handover.reason))"
                )
            }
        }
        rescan(library: library, watcher: nil)
        // fsync: interval — make the latest state durable at most once per period.
        let period = TimeAmount.nanoseconds(
            config.fsyncInterval.components.seconds * 1_000_000_000 + config.fsyncInterval.components.attoseconds / 1_000_000_000)
        let syncTask = Mutex<RepeatedTask?>(
            config.fsync == .interval
                ? engine.eventLoop.scheduleRepeatedTask(initialDelay: period, delay: period) { _ in host.syncIfNeeded() }
                : nil)
        // Cancelled once, before the loops shut down: a cancel after that schedules on a dead loop.
        let stopSync = {
            syncTask.withLock {
                $0?.cancel(); $0 = nil
            }
        }
        defer { stopSync() }

        let watcherBox = Mutex<DirectoryWatcher?>(nil)
        let debouncer = WatchDebouncer(loop: engine.eventLoop, delay: debounce) { event in
            switch event {
            case .file(let name): library.refresh(filename: name)
            case .lib: library.refreshLib()
            case .rescan: self.rescan(library: library, watcher: watcherBox.locked { $0 })
            }
        }
        let watcher = try DirectoryWatcher(directory: config.macrosDirectory, logger: logger) { debouncer.receive($0) }
        watcherBox.locked { $0 = watcher }
        watcher.start()
        defer { watcher.stop() }

        // The dashboard listens before the socket, so engine.status reports it from the first request.
        if let descriptor = handover?.httpListener { frontends.first?.inherit(listener: descriptor) }
        do {
            try await startFrontends(host: host, resuming: handover != nil)
        } catch {
            stopSync()
            try? await group.shutdownGracefully()
            throw error
        }
        recovery.httpListener.locked { $0 = frontends.first?.listener }
        let server: any Channel
        // The socket is created 0600 (no window in which it has another mode).
        umask(0o177)
        let buffer = config.connectionBufferBytes
        let pipeline = ClientPipeline(
            host: host, allowedUIDs: config.allowedUIDs, maxLineBytes: config.maxLineBytes,
            maxInFlight: config.connectionInFlight, busyControl: busyControl, logger: logger)
        /// An adopted connection's pipeline: it reads nothing until ``resume(_:feeding:)``.
        let setUp: @Sendable (any Channel, [EventKind]) -> EventLoopFuture<Void> = { channel, subscriptions in
            channel.eventLoop.makeCompletedFuture { try pipeline.install(on: channel, subscriptions: subscriptions, adopted: true) }
        }
        busyControl?.setAdopter { client in
            // On the engine's loop, when the entry that kept it busy ended.
            Self.adoptingBootstrap(group: group, buffer: buffer) { setUp($0, []) }
                .withConnectedSocket(client.fd)
                .whenComplete { result in
                    guard case .success(let channel) = result else {
                        client.close()
                        return
                    }
                    let (input, output) = client.adopted(by: channel)
                    if !output.isEmpty {
                        var bytes = channel.allocator.buffer(capacity: output.count)
                        bytes.writeBytes(output)
                        channel.writeAndFlush(bytes, promise: nil)
                    }
                    Self.resume(channel, feeding: input)
                }
        }
        busyControl?.start()
        defer { busyControl?.stop() }
        do {
            let bootstrap = ServerBootstrap(group: group)
                .serverChannelOption(.backlog, value: 256)
                .childChannelOption(.allowRemoteHalfClosure, value: true)
                .childChannelOption(.writeBufferWaterMark, value: .init(low: buffer / 4, high: buffer))
                .childChannelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture { try pipeline.install(on: channel) }
                }
            if let listener = handover?.listener {
                server = try await bootstrap.withBoundSocket(listener).get()
            } else {
                server = try await bootstrap.bind(unixDomainSocketPath: socketPath, cleanupExistingSocketFile: false).get()
            }
            recovery.listener.locked { $0 = server }
            if let provider = server as? any SocketOptionProvider {
                let cookie: UInt64 = try await provider.unsafeGetSocketOption(
                    level: SocketOptionLevel(SOL_SOCKET), name: SocketOptionName(SocketCookie.option)
                ).get()
                recovery.listenerCookie.store(cookie, ordering: .relaxed)
            }
            await adopt(handover?.clients ?? [], group: group, buffer: buffer, setUp: setUp)
        } catch {
            umask(0o077)
            for frontend in frontends { await frontend.stop() }
            stopSync()
            try? await group.shutdownGracefully()
            throw MacroDaemonError(code: .bind, message: "cannot listen on \(socketPath): \(error)")
        }
        umask(0o077)
        logger.info(
            "macrod \(version) listening on \(socketPath)",
            metadata: [
                "macros": "\(config.macrosDirectory)", "state": "\(store.path)", "pid": "\(getpid())",
            ])
        if let handover {
            let elapsed = Int((Date().timeIntervalSince1970 - handover.stalledAt) * 1000)
            logger.warning(
                "engine restarted after a stall; serving again \(elapsed) ms after it was noticed, with \(handover.clients.count) connection(s) kept",
                metadata: [
                    "reason": "\(handover.reason)", "restarts": "\(handover.restarts.count)",
                ])
        }
        notifier.notify("READY=1\nSTATUS=listening on \(socketPath)")

        // A shutdown that began before the restart goes on here: serve what was handed over
        // (within the grace period), then stop.
        let shutdownCarriedOver = handover?.shuttingDown ?? false
        if shutdownCarriedOver {
            recovery.shutdownRequested.store(true, ordering: .relaxed)
            logger.info("a shutdown began before the engine restart: shutting down")
            server.close(promise: nil)
        }
        await withTaskGroup(of: Void.self) { tasks in
            tasks.addTask {
                await withGracefulShutdownHandler {
                    try? await server.closeFuture.get()
                } onGracefulShutdown: {
                    recovery.shutdownRequested.store(true, ordering: .relaxed)
                    server.close(promise: nil)
                }
            }
            tasks.addTask {
                for await _ in await UnixSignalsSequence(trapping: .sighup) {
                    await self.reloadConfig(host: host, library: library, watcher: watcher)
                }
            }
            _ = await tasks.next()
            tasks.cancelAll()
        }

        // Shutting down: no new connections. Let calls in flight finish within the grace period.
        logger.info("shutting down: waiting up to \(config.shutdownGrace) for \(host.pending) call(s) in flight")
        let deadline = ContinuousClock.now + config.shutdownGrace
        while host.pending > 0, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(5))
        }
        if host.pending == 0 {
            await Self.drainReplies(engine: engine.eventLoop, connections: hub.all.map(\.channel.eventLoop))
        } else {
            // Past the grace period: every request still in flight gets an answer, not an EOF.
            let error = RPCError(
                code: RPCError.engineRestarted,
                message: "macrod is shutting down: this request did not finish within shutdown_grace_ms; nothing of it was kept; send it again when macrod is back")
            for entry in host.inFlight.takeAll() { entry.promise.succeed(entry.id.map { RPCCodec.response(id: $0, error: error) }) }
            // Written and flushed on the connections' loops (the engine's may still be stuck).
            var loops: [ObjectIdentifier: any EventLoop] = [:]
            for connection in hub.all where connection.channel.eventLoop !== engine.eventLoop {
                loops[ObjectIdentifier(connection.channel.eventLoop)] = connection.channel.eventLoop
            }
            for loop in loops.values {
                for _ in 0..<2 { _ = try? await loop.submit {}.get() }
            }
        }
        for frontend in frontends { await frontend.stop() }
        for connection in hub.all { try? await connection.channel.close() }
        var unsaved: (any Error)?
        do {
            try host.journal.close(saving: model.valuesByName)
        } catch {
            logger.error("cannot save the state on shutdown: \(StatePersistence.describe(error))")
            unsaved = error
        }
        unlink(socketPath)
        stopSync()
        try? await group.shutdownGracefully()
        if let unsaved {
            // Exit 74 (EX_IOERR), not 0: a supervisor or a script must see that values were lost.
            throw MacroDaemonError(
                code: .stateNotSaved,
                message: "macrod stopped without saving the state (exit 74): \(StatePersistence.describe(unsaved))")
        }
        logger.info("macrod stopped")
    }

    /// The last replies are still on their way when the last request stops counting: the batch
    /// that finished them releases them at its end (a group commit), as one task for each
    /// connection's loop, where each is written and its flush scheduled as one more task. So:
    /// one turn of the engine's loop, then two of each connection loop, before anything closes.
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
        _ clients: [Handover.Client], group: MultiThreadedEventLoopGroup, buffer: Int,
        setUp: @escaping @Sendable (any Channel, [EventKind]) -> EventLoopFuture<Void>
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

    /// Starts the listeners beside the socket (the dashboard); when one cannot start, macrod
    /// fails to start.
    private func startFrontends(host: EngineHost, resuming: Bool) async throws {
        let gateway = RPCGateway(host: host, channels: config.channels)
        var started: [any DaemonFrontend] = []
        do {
            for frontend in frontends {
                gateway.setDashboard(try await frontend.start(gateway: gateway, resuming: resuming))
                started.append(frontend)
            }
        } catch {
            for frontend in started { await frontend.stop() }
            throw error
        }
    }

    private func restoreState(_ environment: EngineEnvironment) {
        var warnings: [StateWarning] = []
        do {
            if case .corrupt(let reason, let movedTo) = try environment.restoreState(warnings: &warnings) {
                logger.warning("state file \(environment.store.path) is corrupt (\(reason)); kept as \(movedTo), starting from the defaults")
            }
        } catch {
            logger.error("cannot read the state file: \(error); starting from the defaults")
        }
        for warning in warnings { logger.warning("\(warning.message)") }
    }

    /// Full rescan: re-watch the directory (it may be new) and reload every file.
    private func rescan(library: MacroLibrary, watcher: DirectoryWatcher?) {
        watcher?.rewatchDirectory()
        do {
            let entries = try library.reload()
            logger.info("loaded \(entries.filter { $0.status == .ok }.count) macro(s) from \(library.directory), \(entries.filter { $0.status == .error }.count) broken")
        } catch {
            logger.warning("\(error); serving no macros until the directory exists")
            library.removeAll()
        }
    }

    private func reloadConfig(host: EngineHost, library: MacroLibrary, watcher: DirectoryWatcher) async {
        if let configFile {
            do {
                let fresh = try MacroConfig.load(file: configFile)
                host.engine.timeLimit = fresh.timeLimit
                host.engine.callDeadline = fresh.callDeadline
                host.update { settings in
                    settings.engineEval = fresh.engineEval
                    settings.queueLimit = fresh.queueLimit
                }
                if fresh.macrosDirectory != config.macrosDirectory || fresh.channels != config.channels || fresh.socket != config.socket {
                    logger.warning("SIGHUP: macros_dir, progress and socket changes take effect on restart")
                }
                logger.info("SIGHUP: re-read \(configFile)")
            } catch {
                logger.error("SIGHUP: keeping the current config: \(error)")
            }
        }
        _ = try? await host.engine.eventLoop.submit { self.rescan(library: library, watcher: watcher) }.get()
    }

    /// Refuses a socket path where a daemon answers or that is not a socket; removes a stale one.
    static func clearStaleSocket(_ path: String) throws {
        var info = stat()
        guard lstat(path, &info) == 0 else { return }
        guard (info.st_mode & S_IFMT) == S_IFSOCK else {
            throw MacroDaemonError(code: .permission, message: "\(path) exists and is not a socket; not touching it")
        }
        do {
            _ = try RPCClient(path: path)
            throw MacroDaemonError(code: .alreadyRunning, message: "another macrod is already listening on \(path)")
        } catch let error as RPCClient.ConnectError where error.exitCode == Int32(RPCClient.ConnectError.unreachable) {
            unlink(path)
        } catch let error as RPCClient.ConnectError {
            throw MacroDaemonError(code: .permission, message: "\(path): \(error.description)")
        }
    }
}
