import Logging
import MacroEngineCore
import Synchronization

/// The last line of defence: the ``StallWatch`` on a thread of its own, from the first file
/// loaded on, with systemd's heartbeat on its tick and ``StallRecovery`` when the engine is stuck.
/// First to start and last to stop: a stuck engine is still restarted while macrod shuts down
/// (the restart carries the shutdown over), up to the event loops' own shutdown.
final class StallGuardService: DaemonService {
    private let occupancy: EngineOccupancy
    private let grace: Duration
    private let memoryCeiling: Int
    private let notifier: SystemdNotifier
    private let recovery: StallRecovery
    private let logger: Logger
    private let watch = Mutex<StallWatch?>(nil)

    /// Watches `occupancy` with `stall_grace_ms` and a memory ceiling of 1.5 x `memory_limit_mb`.
    init(occupancy: EngineOccupancy, config: MacroConfig, notifier: SystemdNotifier, recovery: StallRecovery, logger: Logger) {
        self.occupancy = occupancy
        self.grace = config.stallGrace
        self.memoryCeiling = (config.memoryLimitMB << 20) / 2 * 3
        self.notifier = notifier
        self.recovery = recovery
        self.logger = logger
    }

    /// Starts the watch's thread.
    func start() {
        let notifier = notifier, recovery = recovery, logger = logger
        let watch = StallWatch(
            occupancy: occupancy, grace: grace, memoryCeiling: memoryCeiling,
            onTick: { healthy in notifier.heartbeat(healthy: healthy) },
            onMemoryNotBlamed: { resident in
                logger.warning(
                    "the process is at \(resident >> 20) MiB, past 1.5 x memory_limit_mb, but the JavaScript running now did not grow it (memory outside JavaScript: connections' buffers?); no call is blamed and the engine is not restarted"
                )
            },
            onStall: { recovery.recover($0) })
        self.watch.withLock { $0 = watch }
        recovery.watch.withLock { $0 = watch }
    }

    /// Stops the watch at its next tick.
    func stop() { watch.withLock { $0?.stop() } }
}
