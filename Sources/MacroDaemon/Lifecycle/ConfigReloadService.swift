import Logging
import MacroEngineCore
import ServiceLifecycle
import UnixSignals

/// SIGHUP: re-reads the config file (the settings that can change while macrod runs) and
/// rescans the macros. Handled while macrod serves: from once the socket listens to the start
/// of graceful shutdown.
final class ConfigReloadService: DaemonService {
    private let configFile: String?
    private let config: MacroConfig
    private let host: EngineHost
    private let watch: MacrosWatchService
    private let logger: Logger

    /// Reloads `configFile` (nil: none, SIGHUP only rescans) into `host`; `config` is what macrod
    /// started with.
    init(configFile: String?, config: MacroConfig, host: EngineHost, watch: MacrosWatchService, logger: Logger) {
        self.configFile = configFile
        self.config = config
        self.host = host
        self.watch = watch
        self.logger = logger
    }

    /// Nothing: SIGHUP is trapped while it serves.
    func start() {}

    /// Reloads at each SIGHUP until graceful shutdown.
    func serve() async {
        await cancelWhenGracefulShutdown {
            for await _ in await UnixSignalsSequence(trapping: .sighup) {
                await self.reload()
            }
        }
    }

    /// Nothing left to stop.
    func stop() {}

    func reload() async {
        if let configFile {
            do {
                let fresh = try MacroConfig.load(file: configFile)
                host.engine.timeLimit = fresh.timeLimit
                host.engine.callDeadline = fresh.callDeadline
                host.recordRuns(fresh.recordRuns, limits: RunLog.Limits(perMacro: fresh.runsKept, failedPerMacro: fresh.failedRunsKept, bytes: fresh.runsBytes))
                host.update { settings in
                    settings.engineEval = fresh.engineEval
                    settings.queueLimit = fresh.queueLimit
                    settings.history = HistoryLimits(versions: fresh.historyVersions, bytes: fresh.historyBytes)
                    settings.auditEntries = fresh.auditEntries
                }
                host.history.audit.record(.configReload, by: AuditActor(.signal), details: ["file": .string(configFile), "ok": true])
                if fresh.macrosDirectory != config.macrosDirectory || fresh.channels != config.channels || fresh.socket != config.socket {
                    logger.warning("SIGHUP: macros_dir, progress and socket changes take effect on restart")
                }
                logger.info("SIGHUP: re-read \(configFile)")
            } catch {
                logger.error("SIGHUP: keeping the current config: \(error)")
                host.history.audit.record(
                    .configReload, by: AuditActor(.signal), details: ["file": .string(configFile), "ok": false, "error": .string("\(error)")])
            }
        }
        let watch = watch
        _ = try? await host.engine.eventLoop.submit { watch.rescan() }.get()
    }
}
