import Foundation
import Logging
import MacroEngineCore
import MacroRPC
import NIOPosix
import ServiceLifecycle

#if canImport(Glibc)
import Glibc
#endif

/// macrod: the engine and the progress model behind a Unix socket (JSON-RPC 2.0, one JSON text
/// per line), with live reload of the macros directory. A swift-service-lifecycle `Service`
/// that runs its parts as services of their own (`Lifecycle/`, `Watch/`): on graceful shutdown
/// (SIGTERM/SIGINT) it stops accepting, lets calls in flight finish within the grace period,
/// writes the state, removes the socket file and returns. SIGHUP re-reads the config and
/// rescans the macros.
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
    private let hub: NotificationHub
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
        // The hub logs with the base handler only: what it says of a dropped subscriber is not
        // itself sent to subscribers.
        let hub = NotificationHub(logger: base)
        self.hub = hub
        var combined = Logger(label: base.label) { _ in
            MultiplexLogHandler([base.handler, HubLogHandler(hub: hub, logLevel: base.logLevel)])
        }
        combined.logLevel = base.logLevel
        self.logger = combined
    }

    /// Runs until graceful shutdown. Throws ``MacroDaemonError`` when it cannot start. The
    /// composition root: builds the parts every service shares (the engine, its host, the stall
    /// recovery), then runs the services in a `ServiceGroup` (see ``ServiceChain``).
    public func run() async throws {
        let started = HostSettings.bootNanoseconds()
        // The user's umask decides the mode of macro files macrod creates (macro.save); a
        // re-executed macrod (engine restart) inherits it from the first one's environment.
        let userUmask = FileMode.userUmask(current: umask(0o077))
        // SIGHUP is trapped once the socket listens (ConfigReloadService); until then it must not
        // end macrod (its default action), e.g. a reload sent right after READY=1.
        signal(SIGHUP, SIG_IGN)
        DescriptorLimit.raise()
        // Started by a stalled macrod re-executing itself: its sockets and quarantine come along.
        let handover = Handover.take()
        try SocketFile.prepare(socketPath, inherited: handover?.listener != nil)

        // io_thread: engine — the connections share the engine's loop (no hand-off per request).
        let loops = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let environment = try EngineEnvironment(
            config: config, name: "macrod", eventLoop: config.ioThread == .engine ? loops.next() : nil, logger: logger)
        restoreState(environment)
        var settings = EngineHost.Settings(
            engineEval: config.engineEval, queueLimit: config.queueLimit, socket: socketPath, fsync: config.fsync,
            newFileMode: FileMode.newFile(umask: userUmask))
        settings.history = HistoryLimits(versions: config.historyVersions, bytes: config.historyBytes)
        settings.auditEntries = config.auditEntries
        // An engine restart is the same macrod: its uptime goes on from the first process's start.
        settings.started = handover?.started ?? started
        let host = EngineHost(
            environment: environment, hub: hub, settings: settings, version: version, logger: logger)
        resume(host: host, library: environment.library, from: handover)
        host.persistence.checkWritable()
        let recovery = StallRecovery(
            host: host, library: environment.library, hub: hub, previous: handover, stallQuarantine: config.stallQuarantine, logger: logger)
        let notifier = SystemdNotifier()

        // Started in this order, each once the one before it has (the state save once the socket
        // listens); stopped in the reverse order, each waited for.
        let busy = BusyControlService(config: config, host: host, recovery: recovery, logger: logger)
        let watch = MacrosWatchService(library: environment.library, loop: environment.engine.eventLoop, logger: logger)
        let listener = SocketListenerService(
            config: config, socketPath: socketPath, version: version, statePath: environment.store.path, host: host, group: loops,
            busyControl: busy.control, recovery: recovery, handover: handover, notifier: notifier, logger: logger)
        var services = ServiceChain()
        services.append(StallGuardService(occupancy: environment.engine.occupancy, config: config, notifier: notifier, recovery: recovery, logger: logger))
        services.append(watch)
        services.append(busy)
        services.append(EventLoopsService(loops))
        // After the loops: stopped before them, so no trigger is armed on a loop that is gone.
        services.append(TriggersService(library: environment.library, model: environment.model))
        services.append(FsyncTimerService(loop: environment.engine.eventLoop, period: config.fsync == .interval ? config.fsyncInterval : nil) { host.syncIfNeeded() })
        services.append(StateSaveService(host: host, model: environment.model, socketPath: socketPath, logger: logger), startingAfter: listener)
        services.append(DashboardService(frontends: frontends, host: host, channels: config.channels, handover: handover, recovery: recovery))
        // SIGHUP's reload starts once the socket listens and stops after it: a SIGTERM during a
        // reload that waits for the engine closes the listener at once.
        services.append(ConfigReloadService(configFile: configFile, config: config, host: host, watch: watch, logger: logger), startingAfter: listener)
        services.append(listener)
        try await services.group().run()
        logger.info("macrod stopped")
    }

    /// What a stalled macrod handed over besides its sockets: its restart count, its quarantine,
    /// and JavaScript paused when the restart budget ran out.
    private func resume(host: EngineHost, library: MacroLibrary, from handover: Handover?) {
        guard let handover else { return }
        host.metrics.restarts.increment(by: handover.totalRestarts)
        library.setQuarantine(handover.quarantine)
        if handover.paused {
            host.engine.pauseJavaScript(
                reason:
                    "the engine stalled more than \(StallRecovery.budget) times within \(Int(StallRecovery.budgetWindow)) s in code no macro file answers for (\(handover.reason))"
            )
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
        let (_, skipped) = environment.runs.load(from: environment.runsPath)
        if skipped > 0 { logger.warning("\(environment.runsPath): \(skipped) run record(s) could not be read; skipped") }
    }
}
