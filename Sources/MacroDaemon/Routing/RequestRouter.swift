import Logging
import MacroEngineCore
import MacroRPC
import NIOCore
import Synchronization

/// The method table: each request is looked up once and goes down one of two lanes. The
/// control lane (``ControlLane``: `macro.running`, `macro.cancel`, and `progress.get` of the
/// committed values) is answered here, on the connection's thread, so it works while a macro
/// keeps the engine busy; the engine lane becomes an ``EngineJob`` for the ``EngineLane``, which
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
    /// the next process, which answers them (their promises are kept until `exec`).
    let lateArrivals = Mutex<[(connection: Connection, request: RPCRequest, promise: EventLoopPromise<RPCMessage?>)]>([])

    init(
        engine: MacroEngine, methods: EngineMethods, laneState: NIOLoopBoundBox<EngineLane.State>, settings: SettingsBox,
        counters: RequestCounters, inFlight: InFlightRequests, logger: Logger
    ) {
        self.engine = engine
        lane = EngineLane(methods: methods, inFlight: inFlight, state: laneState, counters: counters, logger: logger)
        self.settings = settings
        self.counters = counters
        self.inFlight = inFlight
        self.logger = logger
        control = ControlLane(engine: engine, publisher: methods.publisher, inFlight: inFlight, counters: counters, logger: logger)
        debug = DebugMethods(engine: engine, model: methods.model, directory: methods.library.directory, logger: logger)
    }

    /// The error of a request the engine restart overtook.
    static let restartError = RPCError(
        code: RPCError.engineRestarted,
        message: "engine restarted: a macro kept the engine busy past its deadline and stall_grace_ms; this request did not complete and nothing of it was kept; send it again")

    /// Handles one request (see ``handle(_:from:)-([RPCRequest],_)``).
    func handle(_ request: RPCRequest, from connection: Connection) -> EventLoopFuture<RPCMessage?> {
        handle([request], from: connection)[0]
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
                admit(request, from: connection, jobs: &jobs, slot: .init(batch: batch, index: index)).whenSuccess { reply in
                    batch.deliver(index, reply)
                }
                lane.submit(jobs)
            }
        }
        return batch.promise.futureResult
    }

    /// Handles the requests of one read, in order: the control lane is answered here, off the
    /// engine's thread; the engine lane runs on the engine's loop as one batch (one hand-over,
    /// one journal append, see ``GroupCommit``). Answers -32005 at once when the queue is full.
    /// The method is looked up first: an unknown one is -32601 whatever its params. The
    /// returned futures (one per request) complete on the connection's loop.
    func handle(_ requests: [RPCRequest], from connection: Connection) -> [EventLoopFuture<RPCMessage?>] {
        var jobs: [EngineJob] = []
        jobs.reserveCapacity(requests.count)
        let replies = requests.map { admit($0, from: connection, jobs: &jobs) }
        lane.submit(jobs)
        return replies
    }

    /// Admits one request: its reply, answered at once or by an engine job appended to `jobs`.
    /// `slot`: its place in a JSON-RPC batch.
    private func admit(
        _ request: RPCRequest, from connection: Connection, jobs: inout [EngineJob], slot: BatchReplies.Slot? = nil
    ) -> EventLoopFuture<RPCMessage?> {
        let replyLoop = connection.channel.eventLoop
        guard let method = RPCMethod(rawValue: request.method) else {
            if request.id != nil { counters.countError() }
            let error = RPCError(code: RPCError.methodNotFound, message: "Method not found: \(request.method)")
            return replyLoop.makeSucceededFuture(request.id.map { RPCCodec.response(id: $0, error: error) })
        }
        if restarting.load(ordering: .relaxed) {
            // A batch's element is answered in the batch's array, in this process: not started, -32006.
            if slot != nil { return replyLoop.makeSucceededFuture(request.id.map { RPCCodec.response(id: $0, error: Self.restartError) }) }
            let promise = replyLoop.makePromise(of: RPCMessage?.self)
            lateArrivals.locked { $0.append((connection, request, promise)) }
            return promise.futureResult
        }
        if let reply = control.answer(request, method, from: connection) { return reply }
        if method.descriptor.lane == .debug { return debug.answer(request, method, from: connection) }
        let limit = settings.read { $0.queueLimit }
        guard lane.reserve(limit: limit) else {
            counters.countError()
            let reply = request.id.map {
                RPCCodec.response(id: $0, error: RPCError(code: RPCError.busy, message: "busy: \(limit) request\(limit == 1 ? " is" : "s are") already waiting; try again"))
            }
            return replyLoop.makeSucceededFuture(reply)
        }
        let callID = method == .call ? engine.reserveCallID() : nil
        let promise = replyLoop.makePromise(of: RPCMessage?.self)
        let started = InFlightRequests.StartFlag()
        let token = inFlight.add(
            .init(
                id: request.id, kind: callID.map { .call($0) } ?? .other, promise: promise,
                request: request, connection: connection, started: started, batch: slot))
        connection.engineRequests.add(1, ordering: .relaxed)
        jobs.append(EngineJob(method: method, request: request, callID: callID, connection: connection, token: token, started: started))
        return promise.futureResult
    }
}
