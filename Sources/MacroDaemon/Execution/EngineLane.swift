import Logging
import MacroEngineCore
import MacroRPC
import NIOCore
import Synchronization

/// One request admitted to the engine lane: plain data, run by ``EngineLane``.
struct EngineJob: Sendable {
    let method: RPCMethod
    let request: RPCRequest
    /// The call id reserved for a `macro.call` when it was admitted.
    let callID: Int?
    let connection: Connection
    /// Its entry in ``InFlightRequests`` (where its reply goes).
    let token: Int
    let started: InFlightRequests.StartFlag
}

/// The engine lane: the one place where requests cross from the connections' threads to the
/// engine's loop. The requests of one read go over as one task (one wake-up) and run in order as
/// one batch through the method table's handlers (``EngineMethods``); the batch's journal append, notifications and replies
/// follow its end, in that order (``GroupCommit``), and the replies for other loops leave in one
/// task per loop (``ReplyOutbox``). Its `Sendable` surface is ``reserve(limit:)`` and
/// ``submit(_:)``; everything else runs on the engine's loop, where the group commit and the
/// outbox are plain stored state. With `io_thread: engine` the connections are on the engine's
/// loop, and a batch is a task of that loop all the same (see ``submit(_:)``).
final class EngineLane: Sendable {
    /// A reply held for its batch's commit.
    struct HeldReply {
        let job: EngineJob
        let outcome: Result<MacroValue, any Error>
    }
    /// The lane's loop-confined state.
    final class State {
        let commit = GroupCommit<PreparedNotification, HeldReply>()
        let outbox = ReplyOutbox()
    }

    /// The engine's loop.
    let loop: any EventLoop
    /// The group commit and the outbox, on the engine's loop.
    let state: NIOLoopBoundBox<State>
    private let methods: EngineMethods
    private let inFlight: InFlightRequests
    private let persistence: StatePersistence
    private let publisher: ProgressPublisher
    private let counters: RequestCounters
    private let logger: Logger
    private let queued = Atomic<Int>(0)
    /// Batches sent to the loop and not started yet.
    private let queuedBatches = Atomic<Int>(0)

    init(
        methods: EngineMethods, inFlight: InFlightRequests, state: NIOLoopBoundBox<State>, counters: RequestCounters,
        logger: Logger
    ) {
        loop = methods.engine.eventLoop
        self.methods = methods
        self.inFlight = inFlight
        self.state = state
        persistence = methods.persistence
        publisher = methods.publisher
        self.counters = counters
        self.logger = logger
    }

    /// Requests waiting for or running on the engine.
    var pending: Int { queued.load(ordering: .relaxed) }

    /// Takes a place in the queue; false (and nothing taken) when `limit` requests already wait.
    func reserve(limit: Int) -> Bool {
        if queued.add(1, ordering: .relaxed).newValue > limit {
            queued.subtract(1, ordering: .relaxed)
            return false
        }
        return true
    }

    /// Runs `jobs` (each holding a place taken with ``reserve(limit:)``) on the engine's loop as one batch.
    func submit(_ jobs: [EngineJob]) {
        guard !jobs.isEmpty else { return }
        // Always as a task, even from the engine's own loop (`io_thread: engine`): the
        // connections' events of one wake-up are all read first, so their batches queue up
        // behind each other and share one journal append (the group commit), and JavaScript
        // never runs inside an I/O event: what ``BusyControl`` reads from a socket while it runs
        // is then never announced to the loop as still readable. From the loop itself a task
        // is no wake-up.
        queuedBatches.add(1, ordering: .relaxed)
        loop.execute { [self] in run(jobs) }
    }

    /// One batch on the engine's loop: the jobs in order, then the group commit; the replies it
    /// releases for other loops leave in one task per loop.
    private func run(_ jobs: [EngineJob]) {
        let moreQueued = queuedBatches.subtract(1, ordering: .relaxed).newValue > 0 && jobs.allSatisfy { $0.method.defersCommit }
        let state = state.value
        state.outbox.begin()
        state.commit.begin()
        for job in jobs { start(job) }
        if let release = state.commit.end(moreQueued: moreQueued) { carryOut(release, state) }
        state.outbox.end()
    }

    /// Runs one job's handler, found in the method table's handler column: a value completes the
    /// job at once, a future (a macro that awaits) when it completes.
    private func start(_ job: EngineJob) {
        job.started.set()
        let reply: MethodReply?
        do {
            let request = MethodRequest(params: try Params(job.request, method: job.method), id: job.request.id, callID: job.callID, connection: job.connection)
            reply = try job.method.handle(with: methods, request)
        } catch {
            return completed(job, .failure(error))
        }
        switch reply {
        case .value(let value): completed(job, .success(value))
        case .future(let future): future.whenComplete { [self] outcome in completed(job, outcome) }
        case .call(.ended(let outcome), let record):
            // Ended in its first turn: no future, no callback.
            methods.callEnded(record, outcome)
            completed(job, outcome)
        case .call(.pending(let future), let record):
            future.whenComplete { [self] outcome in
                methods.callEnded(record, outcome)
                completed(job, outcome)
            }
        case nil:
            // The control lane's and the debug sessions' methods are never admitted here.
            let error = RPCError(code: RPCError.internalError, message: "internal error: \(job.method.rawValue) is not run on the engine lane")
            completed(job, .failure(error))
        }
    }

    /// A job's work completed: gives its place back, publishes what it changed, then answers it,
    /// at once or after the commit of the batch that is open.
    private func completed(_ job: EngineJob, _ outcome: Result<MacroValue, any Error>) {
        job.started.finish()
        queued.subtract(1, ordering: .relaxed)
        publisher.publishIfChanged()
        let state = state.value
        if state.commit.isOpen { state.commit.hold(HeldReply(job: job, outcome: outcome)) } else { answer(job, outcome, state) }
    }

    /// The commit: the journal once, then segment by segment its notifications and its replies.
    private func carryOut(_ release: GroupCommit<PreparedNotification, HeldReply>.Release, _ state: State) {
        if release.changed { persistence.append() }
        for segment in release.segments {
            for notification in segment.notifications { publisher.publish(notification) }
            for reply in segment.replies { answer(reply.job, reply.outcome, state) }
            // A batch's replies before the next segment's notifications.
            state.outbox.flush()
        }
    }

    /// Answers a job on its connection's loop, unless a restart answered it already (a reply held
    /// for its batch's commit included: its change was not journaled, so -32006 "nothing was
    /// kept" holds).
    private func answer(_ job: EngineJob, _ outcome: Result<MacroValue, any Error>, _ state: State) {
        // Counted until its reply is released: a committed progress.get answered off the engine
        // thread must not overtake it (it would show values not journaled yet).
        job.connection.engineRequests.subtract(1, ordering: .relaxed)
        guard let entry = inFlight.take(job.token) else { return }
        guard let id = job.request.id else { return state.outbox.deliver(entry.route, nil) }
        switch outcome {
        case .success(let result): state.outbox.deliver(entry.route, RPCCodec.response(id: id, result: result))
        case .failure(let error):
            counters.countError()
            state.outbox.deliver(entry.route, RPCCodec.response(id: id, error: RPCError(error, method: job.request.method, logger: logger)))
        }
    }
}
