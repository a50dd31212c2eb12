import Logging
import MacroEngineCore
import MacroRPC
import NIOCore
import Synchronization

/// The method table: each request is looked up once and goes down one of two lanes. The
/// control lane (``ControlLane``: `macro.running`, `macro.cancel`, and `progress.get` of the
/// committed values) is answered here, on the connection's thread, so it works while a macro
/// keeps the engine busy; the engine lane becomes a job for the ``EngineExecutor``, which runs
/// it through ``EngineMethods`` on the engine's loop.
final class RequestRouter: Sendable {
    private let engine: MacroEngine
    private let executor: EngineExecutor
    private let methods: EngineMethods
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
        engine: MacroEngine, executor: EngineExecutor, methods: EngineMethods, settings: SettingsBox,
        counters: RequestCounters, inFlight: InFlightRequests, logger: Logger
    ) {
        self.engine = engine
        self.executor = executor
        self.methods = methods
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
        var jobs: [EngineExecutor.Job] = []
        let reply = admit(request, from: connection, jobs: &jobs)
        executor.submit(jobs)
        return reply
    }

    /// Handles the requests of one read, in order: the control lane is answered here, off the
    /// engine's thread; the engine lane runs on the engine's loop as one batch (one hand-over,
    /// one journal append, see ``GroupCommit``). Answers -32005 at once when the queue is full.
    /// The method is looked up first: an unknown one is -32601 whatever its params. The
    /// returned futures (one per request) complete on the connection's loop.
    func handle(_ requests: [RPCRequest], from connection: Connection) -> [EventLoopFuture<RPCMessage?>] {
        var jobs: [EngineExecutor.Job] = []
        let replies = requests.map { admit($0, from: connection, jobs: &jobs) }
        executor.submit(jobs)
        return replies
    }

    /// Admits one request: its reply, answered at once or by an engine job appended to `jobs`.
    private func admit(_ request: RPCRequest, from connection: Connection, jobs: inout [EngineExecutor.Job]) -> EventLoopFuture<RPCMessage?> {
        let replyLoop = connection.channel.eventLoop
        guard let method = RPCMethod(rawValue: request.method) else {
            if request.id != nil { counters.countError() }
            let error = RPCError(code: RPCError.methodNotFound, message: "Method not found: \(request.method)")
            return replyLoop.makeSucceededFuture(request.id.map { RPCCodec.response(id: $0, error: error) })
        }
        if restarting.load(ordering: .relaxed) {
            let promise = replyLoop.makePromise(of: RPCMessage?.self)
            lateArrivals.locked { $0.append((connection, request, promise)) }
            return promise.futureResult
        }
        if let reply = control.answer(request, method, from: connection) { return reply }
        if method.descriptor.lane == .debug { return debug.answer(request, method, from: connection) }
        let limit = settings.read { $0.queueLimit }
        guard executor.reserve(limit: limit) else {
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
                request: request, connection: connection, started: started))
        connection.engineRequests.add(1, ordering: .relaxed)
        let methods = methods
        jobs.append(
            executor.job(
                {
                    methods.run(method, request, callID: callID, connection: connection)
                }, defersCommit: method.defersCommit, progress: started,
                deliver: { [self] outcome in
                    // Counted until its reply is released: a committed progress.get answered off the
                    // engine thread must not overtake it (it would show values not journaled yet).
                    connection.engineRequests.subtract(1, ordering: .relaxed)
                    // A restart may have answered it already (a reply held for its batch's commit
                    // included: its change was not journaled, so -32006 "nothing was kept" holds).
                    guard let entry = inFlight.take(token) else { return }
                    let outbox = executor.outbox.value
                    guard let id = request.id else { return outbox.succeed(entry.promise, nil) }
                    switch outcome {
                    case .success(let result): outbox.succeed(entry.promise, RPCCodec.response(id: id, result: result))
                    case .failure(let error):
                        counters.countError()
                        outbox.succeed(entry.promise, RPCCodec.response(id: id, error: RPCError(error, method: request.method, logger: logger)))
                    }
                }))
        return promise.futureResult
    }
}
