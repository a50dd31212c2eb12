import Logging
import MacroEngineCore

/// With `io_thread: engine` (the connections on the engine's thread): the ``BusyControl``
/// thread, which serves their control requests while JavaScript keeps the engine busy. Started
/// before the socket listens; stopped after the event loops (and what they ran) have shut down.
final class BusyControlService: DaemonService {
    /// The control thread; nil with `io_thread: separate`.
    let control: BusyControl?

    /// Creates the control for `host`'s engine, and gives it to `recovery` (a restart takes what
    /// it holds along).
    init(config: MacroConfig, host: EngineHost, recovery: StallRecovery, logger: Logger) {
        let engine = host.engine
        control =
            config.ioThread == .engine
            ? BusyControl(
                occupancy: engine.occupancy, engine: engine, control: host.router.control, publisher: host.publisher,
                allowedUIDs: config.allowedUIDs, listenerCookie: { recovery.listenerCookie.load(ordering: .relaxed) }, logger: logger)
            : nil
        recovery.busyControl.locked { $0 = control }
    }

    /// Starts the thread; it accepts nobody before the socket listens (it finds the listener by
    /// its cookie, recorded then).
    func start() { control?.start() }

    /// Stops the thread.
    func stop() { control?.stop() }
}
