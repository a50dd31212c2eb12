import Logging
import MacroEngineCore
import MacroRPC
import NIOCore

/// macrod's engine side, assembled: the ``RequestRouter`` (the method table and its lanes, the
/// ``EngineLane`` among them: the hand-over to the engine's loop and the batch's group
/// commit), ``EngineMethods`` (what each method does), ``StatePersistence`` (the journal and
/// fsync) and the ``ProgressPublisher`` (`progress.changed`). The transports (the socket's
/// ``ConnectionHandler``, the dashboard's ``RPCGateway``) talk to this façade only.
package final class EngineHost: Sendable {
    package let engine: MacroEngine
    let hub: NotificationHub
    /// The Prometheus metrics `GET /metrics` renders.
    let metrics = EngineMetrics()
    /// The per-macro statistics (`macro.stats`), confined to the engine's loop.
    let statistics: NIOLoopBoundBox<StatisticsTable>
    let router: RequestRouter
    let persistence: StatePersistence
    let publisher: ProgressPublisher
    /// The version history and the audit log (``History``): `history.audit.record(...)` records
    /// a change made from outside (a store edit, say).
    package let history: History
    private let settings: SettingsBox
    private let consoleRoutes = ConsoleRoutes()
    private let library: MacroLibrary

    /// The settings (``HostSettings``), under the name the daemon builds them with.
    typealias Settings = HostSettings

    package init(environment: EngineEnvironment, hub: NotificationHub, settings: HostSettings, version: String, logger: Logger) {
        let engine = environment.engine, model = environment.model, library = environment.library
        self.engine = engine
        self.hub = hub
        self.library = library
        let settings = SettingsBox(settings)
        self.settings = settings
        let loop = engine.eventLoop
        let statistics = NIOLoopBoundBox.makeBoxSendingValue(StatisticsTable(metrics: metrics), as: StatisticsTable.self, eventLoop: loop)
        self.statistics = statistics
        let counters = RequestCounters(), inFlight = InFlightRequests()
        let laneState = NIOLoopBoundBox.makeBoxSendingValue(
            EngineLane.State(outbox: ReplyOutbox(inFlight: inFlight, counters: counters, logger: logger)), as: EngineLane.State.self, eventLoop: loop)
        let metrics = metrics
        let history = History(
            stateFile: environment.store.path, limits: settings.read(\.history), auditEntries: settings.read(\.auditEntries), library: library,
            logger: logger, counted: { metrics.auditEvent(kind: $0) })
        self.history = history
        let persistence = StatePersistence(environment: environment, settings: settings, logger: logger)
        let publisher = ProgressPublisher(model: model, store: environment.macroStore, hub: hub, persistence: persistence, laneState: laneState)
        let methods = EngineMethods(
            engine: engine, model: model, library: library, hub: hub, settings: settings, counters: counters,
            publisher: publisher, persistence: persistence, statistics: statistics, consoleRoutes: consoleRoutes, history: history, version: version)
        self.persistence = persistence
        self.publisher = publisher
        router = RequestRouter(
            engine: engine, methods: methods, laneState: laneState, settings: settings,
            counters: counters, inFlight: inFlight, logger: logger)
        // console.* still goes to the log; a macro.call's own output also goes to its caller.
        engine.consoleHandler = { [consoleRoutes, logger] message in
            // With the call's id, so a log shipper can group a call's lines.
            var metadata: Logger.Metadata = [:]
            if let macro = message.macro { metadata["macro"] = "\(macro)" }
            if let call = message.call { metadata["call"] = "\(call)" }
            logger.log(level: message.level, "\(message.message)", metadata: metadata)
            consoleRoutes.forward(message)
        }
        // Every synchronous run of JavaScript is a turn: an animation step publishes its own change.
        engine.onTurnEnd { [publisher] in
            publisher.publishIfChanged()
            let entry = engine.occupancy.takeLastEntry()
            statistics.value.turnEnded(call: entry.call, nanoseconds: entry.nanoseconds)
        }
        LibraryEvents.forward(from: library, to: hub, statistics: statistics, history: history, on: loop)
        environment.runs.defaultOrigin = "socket"
        // `run.recorded` to the subscribers of `runs`: the summary `run.list` gives.
        environment.runs.onRecorded = { [hub] record in
            guard hub.hasSubscribers(.runs), let notification = hub.prepare(.runs, RPCNotification.runRecorded.rawValue, record().summary) else { return }
            hub.deliver(notification)
        }
    }

    /// Changes the settings (SIGHUP, the dashboard's URL); lowered history and audit limits apply
    /// at once.
    func update(_ body: (inout HostSettings) -> Void) {
        settings.update(body)
        history.versions.limits = settings.read(\.history)
        history.audit.limit = settings.read(\.auditEntries)
    }

    /// Records every run from now on, or none (`record_runs`), kept within `limits` (lowered
    /// limits apply at the next record). The records kept so far stay either way.
    func recordRuns(_ on: Bool, limits: RunLog.Limits) {
        let runs = persistence.runs
        runs.limits = limits
        engine.runLog = on ? runs : nil
    }

    /// When macrod started (``HostSettings/started``): handed over to the process an engine restart starts.
    var started: UInt64 { settings.read(\.started) }

    /// Requests waiting for or running on the engine.
    var pending: Int { router.lane.pending }
    /// Requests on the engine (or waiting for a call to stop), answerable by a restart.
    var inFlight: InFlightRequests { router.inFlight }
    /// From now on new requests wait for the next process: the engine is being restarted.
    func beginRestart() { router.restarting.store(true, ordering: .relaxed) }
    /// The state journal.
    var journal: StateJournal { persistence.journal }
    /// The error of a request the engine restart overtook.
    static var restartError: RPCError { RequestRouter.restartError }

    /// For the `interval` policy: fsyncs the state if a change was written since the last sync.
    func syncIfNeeded() { persistence.syncIfNeeded() }

    /// The Prometheus metrics as text, the gauges read first. The heap size is read on the
    /// engine's loop; when a macro keeps it busy past `waitForHeap`, the last reading is shown.
    func metricsText(on loop: any EventLoop, waitForHeap: TimeAmount = .milliseconds(500)) -> EventLoopFuture<[UInt8]> {
        metrics.connections.set(Double(hub.count))
        metrics.queueDepth.set(Double(pending))
        metrics.quarantined.set(Double(library.quarantineList.files.count))
        metrics.javascriptPaused.set(Double(engine.pausedReason == nil ? 0 : 1))
        let promise = loop.makePromise(of: [UInt8].self)
        let once = ScrapeOnce()
        let metrics = metrics
        let timeout = loop.scheduleTask(in: waitForHeap) {
            if once.claim() { promise.succeed(metrics.render()) }
        }
        engine.heapBytes().whenComplete { result in
            if case .success(let bytes) = result { metrics.heapBytes.set(Double(bytes)) }
            if once.claim() {
                timeout.cancel()
                promise.succeed(metrics.render())
            }
        }
        return promise.futureResult
    }
}
