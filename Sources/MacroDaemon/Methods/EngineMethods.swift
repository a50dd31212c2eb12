import Logging
import MacroEngineCore
import MacroRPC
import NIOCore

/// The engine lane's methods: everything but the control lane, run on the engine's loop one at
/// a time in arrival order (the ``EngineLane`` brings them there). Each method's code is in
/// the file of its kind: `LibraryMethods` (the macro files), `CallMethods` (`macro.call`,
/// `macro.profile`), `StatusMethods` (status, statistics, the log, progress, subscriptions).
final class EngineMethods: Sendable {
    let engine: MacroEngine
    let model: ProgressModel
    let library: MacroLibrary
    let hub: NotificationHub
    let settings: SettingsBox
    let counters: RequestCounters
    let publisher: ProgressPublisher
    let persistence: StatePersistence
    /// The per-macro statistics (`macro.stats`), confined to the engine's loop.
    let statistics: NIOLoopBoundBox<StatisticsTable>
    let consoleRoutes: ConsoleRoutes
    let version: String
    let started = ContinuousClock.now

    init(
        engine: MacroEngine, model: ProgressModel, library: MacroLibrary, hub: NotificationHub, settings: SettingsBox,
        counters: RequestCounters, publisher: ProgressPublisher, persistence: StatePersistence,
        statistics: NIOLoopBoundBox<StatisticsTable>, consoleRoutes: ConsoleRoutes, version: String
    ) {
        self.engine = engine
        self.model = model
        self.library = library
        self.hub = hub
        self.settings = settings
        self.counters = counters
        self.publisher = publisher
        self.persistence = persistence
        self.statistics = statistics
        self.consoleRoutes = consoleRoutes
        self.version = version
    }

    /// Runs `method` for `request` on the engine's loop; the future completes with its result
    /// (or fails with an ``RPCError`` or ``MacroError``). `callID` is the call id reserved for a
    /// `macro.call` when it was admitted. The one switch from a method to its handler: a new
    /// case of ``RPCMethod`` is a compile error here until it has one.
    func run(_ method: RPCMethod, _ request: RPCRequest, callID: Int?, connection: Connection) -> EventLoopFuture<MacroValue> {
        let loop = engine.eventLoop
        do {
            let params = try Params(request, method: method)
            switch method {
            case .call: return try call(params, callID: callID, id: request.id, connection: connection)
            case .profile: return try profile(params)
            case .eval: return try eval(params, id: request.id, connection: connection)
            case .list: return loop.makeSucceededFuture(list())
            case .source: return loop.makeSucceededFuture(try source(params))
            case .save: return loop.makeSucceededFuture(try save(params))
            case .check: return loop.makeSucceededFuture(try check(params))
            case .delete: return loop.makeSucceededFuture(try delete(params))
            case .types: return loop.makeSucceededFuture(try types())
            case .progressGet: return loop.makeSucceededFuture(publisher.values())
            case .progressSet: return loop.makeSucceededFuture(try setProgress(params))
            case .subscribe: return loop.makeSucceededFuture(subscriptions(connection.subscribe(try params.events())))
            case .unsubscribe: return loop.makeSucceededFuture(subscriptions(connection.unsubscribe(try params.events())))
            case .status: return loop.makeSucceededFuture(status(for: connection))
            case .stats: return loop.makeSucceededFuture(try stats(params))
            case .logRecent: return loop.makeSucceededFuture(try recentLogs(params))
            case .unquarantine: return loop.makeSucceededFuture(try unquarantine(params))
            case .resume: return loop.makeSucceededFuture(resume())
            case .running, .cancel, .debugStart, .debugList, .debugSetBreakpoints, .debugSetExceptionBreakpoints, .debugRun, .debugPause,
                .debugRequest, .debugTerminate:
                // The control lane's (``ControlLane``) and the debug sessions' (``DebugMethods``):
                // never queued behind the engine.
                throw RPCError(code: RPCError.internalError, message: "internal error: \(method.rawValue) is not run on the engine lane")
            }
        } catch {
            return loop.makeFailedFuture(error)
        }
    }

    /// The reply to `subscribe` and `unsubscribe`: the events the connection is subscribed to now.
    private func subscriptions(_ subscribed: Set<EventKind>) -> MacroValue {
        ["events": .array(EventKind.allCases.filter(subscribed.contains).map { .string($0.rawValue) })]
    }
}
