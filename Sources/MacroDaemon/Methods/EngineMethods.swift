import Logging
import MacroEngineCore
import MacroRPC
import NIOCore

/// The engine lane's methods, the handler column of the method table (``RPCMethodHandlers``,
/// dispatched by ``RPCMethod/handle(with:_:)``): run on the engine's loop one at a time in
/// arrival order (the ``EngineLane`` brings them there). Each method's code is in the file of its
/// kind: `LibraryMethods` (the macro files), `CallMethods` (`macro.call`, `macro.profile`),
/// `StatusMethods` (status, statistics, the log, progress, subscriptions, `engine.eval`),
/// `QuarantineMethods`, `HistoryMethods` (the version history and the audit log).
final class EngineMethods: Sendable, RPCMethodHandlers {
    typealias Request = MethodRequest
    typealias Reply = MethodReply

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
    /// The version history and the audit log.
    let changes: History
    let version: String

    init(
        engine: MacroEngine, model: ProgressModel, library: MacroLibrary, hub: NotificationHub, settings: SettingsBox,
        counters: RequestCounters, publisher: ProgressPublisher, persistence: StatePersistence,
        statistics: NIOLoopBoundBox<StatisticsTable>, consoleRoutes: ConsoleRoutes, history: History, version: String
    ) {
        self.changes = history
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

}

/// A request as an engine-lane handler sees it.
struct MethodRequest {
    /// Its params, checked against its method's entry in the table.
    let params: Params
    /// Its id (nil: a notification, answered with nothing).
    let id: RPCID?
    /// The call id reserved for a `macro.call` when it was admitted.
    let callID: Int?
    /// The connection it came from (its notifications, subscriptions and console lines go there).
    let connection: Connection
}

/// An engine-lane handler's answer: a value now, or one a future completes with on the engine's loop.
enum MethodReply {
    case value(MacroValue)
    case future(EventLoopFuture<MacroValue>)
    /// A `macro.call`: its outcome (ended in its first turn, or its future), and what
    /// ``EngineMethods/callEnded(_:_:)`` records when it ends.
    case call(CallStart, CallRecord)
}

/// What a `macro.call` leaves for its end: its macro, call id, start time and console route.
struct CallRecord {
    let name: String
    let callID: Int?
    /// `NIODeadline.now().uptimeNanoseconds` when it started.
    let start: UInt64
    let route: ConsoleRoutes.Route?
}
