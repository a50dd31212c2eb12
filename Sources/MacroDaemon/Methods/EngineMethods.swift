import Logging
import MacroEngineCore
import MacroRPC
import NIOCore

/// The engine lane's methods: everything but the control lane, run on the engine's loop one at
/// a time in arrival order (the ``EngineExecutor`` brings them there). Each method's code is in
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

    init(engine: MacroEngine, model: ProgressModel, library: MacroLibrary, hub: NotificationHub, settings: SettingsBox,
         counters: RequestCounters, publisher: ProgressPublisher, persistence: StatePersistence,
         statistics: NIOLoopBoundBox<StatisticsTable>, consoleRoutes: ConsoleRoutes, version: String) {
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
    /// `macro.call` when it was admitted.
    func run(_ method: RPCMethod, _ request: RPCRequest, callID: Int?, connection: Connection) -> EventLoopFuture<MacroValue> {
        do {
            let params = try Params(request, method: method)
            switch method {
            case .call: return try call(params, callID: callID, id: request.id, connection: connection)
            case .profile: return try profile(params)
            case .eval: return try eval(params, id: request.id, connection: connection)
            default: return engine.eventLoop.makeSucceededFuture(try dispatch(method, params, connection))
            }
        } catch {
            return engine.eventLoop.makeFailedFuture(error)
        }
    }

    /// The methods that answer at once.
    private func dispatch(_ method: RPCMethod, _ params: Params, _ connection: Connection) throws -> MacroValue {
        switch method {
        case .list: return list()
        case .source: return try source(params)
        case .save: return try save(params)
        case .check: return try check(params)
        case .delete: return try delete(params)
        case .types: return try types()
        case .progressGet: return publisher.values()
        case .progressSet: return try setProgress(params)
        case .subscribe:
            let subscribed = connection.subscribe(try params.events())
            return ["events": .array(EventKind.allCases.filter(subscribed.contains).map { .string($0.rawValue) })]
        case .unsubscribe:
            let subscribed = connection.unsubscribe(try params.events())
            return ["events": .array(EventKind.allCases.filter(subscribed.contains).map { .string($0.rawValue) })]
        case .status: return status(for: connection)
        case .stats: return try stats(params)
        case .logRecent: return try recentLogs(params)
        case .unquarantine: return try unquarantine(params)
        case .resume: return resume()
        case .call, .running, .cancel, .profile, .eval:
            throw RPCError(code: RPCError.internalError, message: "internal error: \(method.rawValue) is not dispatched here")
        }
    }
}
