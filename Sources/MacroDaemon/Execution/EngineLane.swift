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
        let outbox: ReplyOutbox

        /// `outbox` answers the jobs.
        /// Bytes of the large replies this batch made, by connection, not encoded yet.
        var batchReplyBytes: [Int: Int] = [:]

        init(outbox: ReplyOutbox) { self.outbox = outbox }
    }

    /// The engine's loop.
    let loop: any EventLoop
    /// The group commit and the outbox, on the engine's loop.
    let state: NIOLoopBoundBox<State>
    private let methods: EngineMethods
    private let persistence: StatePersistence
    private let publisher: ProgressPublisher
    private let queued = Atomic<Int>(0)
    /// The lane's queue: batches sent to the loop and not started yet, in order, one task each.
    private let batches = Mutex(CircularBuffer<[EngineJob]>())
    /// Requests held until their connection drains (``ReplyBudget``), by connection, in order.
    private let parked = Mutex<[Int: [EngineJob]]>([:])

    /// The lane of `methods`' engine; `state`: its group commit and outbox.
    init(methods: EngineMethods, state: NIOLoopBoundBox<State>) {
        loop = methods.engine.eventLoop
        self.methods = methods
        self.state = state
        persistence = methods.persistence
        publisher = methods.publisher
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
        batches.withLock { $0.append(jobs) }
        loop.execute(run)
    }

    /// The next batch of the queue on the engine's loop (one task per batch), the lane's one
    /// dispatch point: each job's handler, found in
    /// the method table's handler column, in order (a value or a call that ended in its first
    /// turn completes the job at once, a future, a macro that awaits, when it completes); then
    /// the group commit: the journal once, then segment by segment its notifications and its
    /// replies. The replies it releases for other loops leave in one task per loop.
    private func run() {
        // One task per batch appended, so the queue has this one.
        let (next, othersQueued) = batches.withLock { queue in (queue.isEmpty ? nil : queue.removeFirst(), !queue.isEmpty) }
        guard let jobs = next else { return assertionFailure("the engine lane ran with no batch queued") }
        let moreQueued = othersQueued && jobs.allSatisfy { $0.method.defersCommit }
        let state = state.value
        state.outbox.begin()
        state.commit.begin()
        state.batchReplyBytes.removeAll(keepingCapacity: true)
        for job in jobs {
            if job.connection.parked.load(ordering: .relaxed) || mustWait(job.connection, state) {
                park(job)
                continue
            }
            job.started.set()
            let reply: MethodReply?
            do {
                let request = MethodRequest(params: try Params(job.request, method: job.method), id: job.request.id, callID: job.callID, connection: job.connection)
                reply = try job.method.handle(with: methods, request)
            } catch {
                completed(job, .failure(error))
                continue
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
        if let release = state.commit.end(moreQueued: moreQueued) {
            if release.changed { persistence.append() }
            for segment in release.segments {
                for notification in segment.notifications { publisher.publish(notification) }
                for reply in segment.replies { state.outbox.answer(reply.job, reply.outcome) }
                // A batch's replies before the next segment's notifications.
                state.outbox.flush()
            }
        }
        state.outbox.end()
    }

    /// A job's work completed: gives its place back, publishes what it changed, then answers it,
    /// at once or after the commit of the batch that is open.
    private func mustWait(_ connection: Connection, _ state: State) -> Bool {
        connection.mustWait(extra: state.batchReplyBytes.isEmpty ? 0 : state.batchReplyBytes[connection.id] ?? 0)
    }

    /// Holds `job` behind its connection's other held requests.
    private func park(_ job: EngineJob) {
        parked.withLock { $0[job.connection.id, default: []].append(job) }
        job.connection.parked.store(true, ordering: .relaxed)
    }

    /// `connection` drained (or closed): its held requests run next, before any batch queued
    /// after them.
    func resume(_ connection: Connection) {
        loop.execute { [self] in
            guard let jobs = parked.withLock({ $0.removeValue(forKey: connection.id) }) else { return }
            connection.parked.store(false, ordering: .relaxed)
            batches.withLock { $0.prepend(jobs) }
            run()
        }
    }

    private func completed(_ job: EngineJob, _ outcome: Result<MacroValue, any Error>) {
        job.started.finish()
        if case .success(let value) = outcome, let size = value.largeSize {
            state.value.batchReplyBytes[job.connection.id, default: 0] += size
        }
        queued.subtract(1, ordering: .relaxed)
        publisher.publishIfChanged()
        let state = state.value
        if state.commit.isOpen { state.commit.hold(HeldReply(job: job, outcome: outcome)) } else { state.outbox.answer(job, outcome) }
    }
}

extension MacroValue {
    /// About how many bytes the value takes as JSON when that is over 4 KiB (nil: less). A
    /// string's length is known at once; a short value stops the walk early.
    var largeSize: Int? {
        func size(_ value: MacroValue, _ total: inout Int) {
            switch value {
            case .string(let s): total += s.utf8.count + 2
            case .array(let items): for item in items { size(item, &total) }
            case .object(let members): for (key, item) in members { total += key.utf8.count + 3; size(item, &total) }
            default: total += 8
            }
        }
        switch self {
        case .string, .array, .object:
            var total = 0
            size(self, &total)
            return total > 4096 ? total : nil
        default: return nil
        }
    }
}
