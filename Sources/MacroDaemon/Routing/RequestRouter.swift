import Logging
import MacroEngineCore
import MacroRPC
import NIOCore
import Synchronization

/// The method table: each request is looked up once and goes down its method's lane
/// (``RPCMethod/Lane``). The control lane (``ControlLane``: `macro.running`, `macro.cancel`,
/// and `progress.get` of the committed values when the connection has nothing on the engine,
/// `controlWhenIdle`) is answered here, on the connection's thread, so it works while a macro
/// keeps the engine busy; the debug lane (`debug.*`) goes to the debug sessions, each on a
/// thread of its own; the engine lane becomes an ``EngineJob`` for the ``EngineLane``, which
/// runs it through ``EngineMethods`` on the engine's loop.
final class RequestRouter: Sendable {
    private let engine: MacroEngine
    /// The engine lane (its queue, group commit and outbox).
    let lane: EngineLane
    /// The control lane (also used by ``BusyControl`` while the engine is busy).
    let control: ControlLane
    /// The `debug.*` methods (sessions in engines of their own; answered here, off the engine).
    let debug: DebugMethods
    private let settings: SettingsBox
    private let counters: RequestCounters
    private let logger: Logger
    /// Requests on the engine (or waiting for a call to stop), answerable by a restart.
    let inFlight: InFlightRequests
    /// Set once the engine is being restarted: new requests wait for the next process
    /// (``lateArrivals``).
    let restarting = Atomic<Bool>(false)
    /// Requests read after the restart began, with their connections: the restart hands them to
    /// the next process, which answers them (their promises, if any, are kept until `exec`).
    let lateArrivals = Mutex<[(connection: Connection, request: RPCRequest, route: ReplyRoute)]>([])

    init(
        engine: MacroEngine, methods: EngineMethods, laneState: NIOLoopBoundBox<EngineLane.State>, settings: SettingsBox,
        counters: RequestCounters, inFlight: InFlightRequests, logger: Logger
    ) {
        self.engine = engine
        lane = EngineLane(methods: methods, state: laneState)
        self.settings = settings
        self.counters = counters
        self.inFlight = inFlight
        self.logger = logger
        control = ControlLane(engine: engine, publisher: methods.publisher, inFlight: inFlight, counters: counters, logger: logger)
        debug = DebugMethods(engine: engine, model: methods.model, library: methods.library, store: methods.persistence.macroStore, runs: methods.persistence.runs, logger: logger)
    }

    /// The error of a request the engine restart overtook.
    static let restartError = RPCError(
        code: RPCError.engineRestarted,
        message: "engine restarted: a macro kept the engine busy past its deadline and stall_grace_ms; this request did not complete and nothing of it was kept; send it again")

    /// What became of a request ``admit(_:from:jobs:replyToConnection:slot:)`` took.
    enum Admission {
        /// Answered at once (nil: nothing to write, it was a notification).
        case answered(RPCMessage?)
        /// An engine job: its reply goes to the connection's ``ReplyReceiver`` (``ReplyRoute/connection(_:)``).
        case queued
        /// Answered when the future completes, on the connection's loop.
        case later(EventLoopFuture<RPCMessage?>)
    }

    /// Handles one request; the future completes with its reply on the connection's loop.
    func handle(_ request: RPCRequest, from connection: Connection) -> EventLoopFuture<RPCMessage?> {
        var jobs: [EngineJob] = []
        let admission = admit(request, from: connection, jobs: &jobs, replyToConnection: false)
        lane.submit(jobs)
        switch admission {
        case .answered(let reply): return connection.channel.eventLoop.makeSucceededFuture(reply)
        case .later(let future): return future
        case .queued: preconditionFailure("a request admitted with a promise is never queued without one")
        }
    }

    /// Handles a JSON-RPC batch (one line, one WebSocket message): the future is the array of its
    /// replies, the errors of its invalid elements in place (nil: nothing to answer, all were
    /// notifications). Each element is a batch of the engine lane of its own: an element that
    /// commits on its own (`macro.save`) is answered before the next runs, and a long batch does
    /// not hold the loop. The replies gather in ``BatchReplies``, which an engine restart fills
    /// too, so the array comes whole whatever element stalls the engine.
    func handle(batch items: [Result<RPCRequest, RPCFailure>], from connection: Connection) -> EventLoopFuture<RPCMessage?> {
        let loop = connection.channel.eventLoop
        let batch = BatchReplies(count: items.count, promise: loop.makePromise())
        for (index, item) in items.enumerated() {
            switch item {
            case .failure(let failure):
                batch.deliver(index, RPCCodec.response(id: failure.id, error: failure.error))
            case .success(let request):
                var jobs: [EngineJob] = []
                switch admit(request, from: connection, jobs: &jobs, replyToConnection: false, slot: .init(batch: batch, index: index)) {
                case .answered(let reply): batch.deliver(index, reply)
                case .later(let future): future.whenSuccess { reply in batch.deliver(index, reply) }
                case .queued: preconditionFailure("a request admitted with a promise is never queued without one")
                }
                lane.submit(jobs)
            }
        }
        return batch.promise.futureResult
    }

    /// Admits one request, in arrival order: the method is looked up first (an unknown one is
    /// -32601 whatever its params); the control lane and the debug lane are answered here, off
    /// the engine's thread; past the queue limit it is -32005 at once; anything else becomes an
    /// ``EngineJob`` appended to `jobs`, which the caller hands to ``EngineLane/submit(_:)`` with
    /// the others of the same read (one hand-over, one journal append, see ``GroupCommit``).
    /// `replyToConnection`: its reply goes to the connection's ``ReplyReceiver`` (the socket's
    /// single requests: ``Admission/queued``) rather than a promise (``Admission/later(_:)``).
    /// `slot`: its place in a JSON-RPC batch.
    func admit(
        _ request: RPCRequest, from connection: Connection, jobs: inout [EngineJob], replyToConnection: Bool,
        slot: BatchReplies.Slot? = nil
    ) -> Admission {
        guard let method = RPCMethod(rawValue: request.method) else {
            if request.id != nil { counters.countError() }
            let error = RPCError(code: RPCError.methodNotFound, message: "Method not found: \(request.method)")
            return .answered(request.id.map { RPCCodec.response(id: $0, error: error) })
        }
        if restarting.load(ordering: .relaxed) {
            // A batch's element is answered in the batch's array, in this process: not started, -32006.
            if slot != nil { return .answered(request.id.map { RPCCodec.response(id: $0, error: Self.restartError) }) }
            let (route, admission) = route(for: connection, replyToConnection: replyToConnection)
            lateArrivals.locked { $0.append((connection, request, route)) }
            return admission
        }
        if let reply = control.answer(request, method, from: connection) { return .later(reply) }
        if method.descriptor.lane == .debug { return .later(debug.answer(request, method, from: connection)) }
        let limit = settings.read { $0.queueLimit }
        guard lane.reserve(limit: limit) else {
            counters.countError()
            return .answered(
                request.id.map {
                    RPCCodec.response(id: $0, error: RPCError(code: RPCError.busy, message: "busy: \(limit) request\(limit == 1 ? " is" : "s are") already waiting; try again"))
                })
        }
        let callID = method == .call ? engine.reserveCallID() : nil
        let (route, admission) = route(for: connection, replyToConnection: replyToConnection)
        let started = InFlightRequests.StartFlag()
        let token = inFlight.add(
            .init(
                id: request.id, kind: callID.map { .call($0) } ?? .other, route: route,
                request: request, connection: connection, started: started, batch: slot))
        connection.engineRequests.add(1, ordering: .relaxed)
        jobs.append(EngineJob(method: method, request: request, callID: callID, connection: connection, token: token, started: started))
        return admission
    }

    /// Where a request's reply will go, and what its admission says.
    private func route(for connection: Connection, replyToConnection: Bool) -> (ReplyRoute, Admission) {
        if replyToConnection { return (.connection(connection), .queued) }
        let promise = connection.channel.eventLoop.makePromise(of: RPCMessage?.self)
        return (.promise(promise), .later(promise.futureResult))
    }
}
