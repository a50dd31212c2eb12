import Logging
import MacroEngineCore
import MacroRPC
import NIOCore

/// The answers to the jobs a batch completes on the engine's loop (each encoded as its JSON-RPC
/// reply, with the one error mapping), delivered when the batch (or one segment
/// of its group commit) ends: a connection of the engine's own loop (`io_thread: engine`) gets its
/// replies written at once and flushed once, so a client that pipelined sixteen requests gets one
/// `writev`, as Redis writes its replies once per event-loop turn; connections of other loops
/// (the I/O loop, the dashboard's) get theirs in one task per loop, not one cross-thread wake-up
/// per reply. Outside a batch a reply is delivered and flushed at once. Confined to the engine's loop.
final class ReplyOutbox {
    private let inFlight: InFlightRequests
    private let counters: RequestCounters
    private let logger: Logger
    private var depth = 0
    /// Connections of this loop written to and not flushed yet.
    private var unflushed: [Connection] = []
    /// Replies for other loops.
    private var pending: [(route: ReplyRoute, reply: RPCMessage?)] = []

    /// `inFlight`: where each job's route is (a restart may have answered it); `counters`: the
    /// errors answered; `logger`: for the errors mapped to JSON-RPC.
    init(inFlight: InFlightRequests, counters: RequestCounters, logger: Logger) {
        self.inFlight = inFlight
        self.counters = counters
        self.logger = logger
    }

    /// A batch begins: what it delivers is flushed, or handed over, when it ends.
    func begin() {
        // A batch started from inside another (a delivery, io_thread: engine) may never end (a
        // stall): what the outer one collected leaves first.
        if depth > 0 { flush() }
        depth += 1
    }

    /// The batch ends: the outermost flushes and hands over what it collected.
    func end() {
        depth -= 1
        if depth == 0 { flush() }
    }

    /// Answers `job` with `outcome` along its route, unless a restart answered it already (a
    /// reply held for its batch's commit included: its change was not journaled, so -32006
    /// "nothing was kept" holds): written now on this loop (flushed when the batch ends), handed
    /// over when the batch ends for another loop; outside a batch, delivered and flushed at once.
    func answer(_ job: EngineJob, _ outcome: Result<MacroValue, any Error>) {
        // Counted until its reply is released: a committed progress.get answered off the engine
        // thread must not overtake it (it would show values not journaled yet).
        job.connection.engineRequests.subtract(1, ordering: .relaxed)
        guard let route = inFlight.take(job.token)?.route else { return }
        var reply: RPCMessage?
        if let id = job.request.id {
            switch outcome {
            case .success(let result): reply = RPCCodec.response(id: id, result: result)
            case .failure(let error):
                // A check's verdict that a text does not load is its answer (`macro edit` asks
                // for one at every save), not a failed request.
                if !(error is MacroError && job.request.method == RPCMethod.check.rawValue) { counters.countError() }
                reply = RPCCodec.response(id: id, error: RPCError(error, method: job.request.method, logger: logger))
            }
        }
        guard depth > 0 else { return route.deliver(reply) }
        guard route.eventLoop.inEventLoop else { return pending.append((route, reply)) }
        switch route {
        case .promise(let promise): promise.succeed(reply)
        case .connection(let connection):
            // Straight to the transport's handler, which encodes it.
            if let receiver = connection.receiver { receiver.value.receive(reply) } else { connection.receive(reply) }
            if !unflushed.contains(where: { $0 === connection }) { unflushed.append(connection) }
        }
    }

    /// Flushes what was written here and hands over what was collected for other loops (a batch's
    /// replies, before the next batch's notifications are published).
    func flush() {
        if !unflushed.isEmpty {
            let connections = unflushed
            unflushed.removeAll(keepingCapacity: true)
            for connection in connections { connection.flushReplies() }
        }
        guard !pending.isEmpty else { return }
        let replies = pending
        pending.removeAll(keepingCapacity: true)
        var byLoop: [ObjectIdentifier: (loop: any EventLoop, items: [(route: ReplyRoute, reply: RPCMessage?)])] = [:]
        for item in replies {
            let loop = item.route.eventLoop
            byLoop[ObjectIdentifier(loop), default: (loop, [])].items.append(item)
        }
        for (_, group) in byLoop {
            let items = group.items
            group.loop.execute {
                var written: [Connection] = []
                for item in items {
                    switch item.route {
                    case .promise(let promise): promise.succeed(item.reply)
                    case .connection(let connection):
                        if let receiver = connection.receiver { receiver.value.receive(item.reply) } else { connection.receive(item.reply) }
                        if !written.contains(where: { $0 === connection }) { written.append(connection) }
                    }
                }
                for connection in written { connection.flushReplies() }
            }
        }
    }
}
