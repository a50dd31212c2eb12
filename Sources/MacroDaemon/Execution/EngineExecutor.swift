import MacroEngineCore
import NIOCore
import Synchronization

/// The one place where requests cross from the connections' threads to the engine's loop: the
/// requests of one read go over as one task (one wake-up), run in order as one batch inside a
/// ``GroupCommit`` (one journal append, then the batch's notifications and replies, in order;
/// batches already queued behind each other, from other connections, share one commit).
/// With `io_thread: engine` the connections are on the engine's loop, and a batch is a task of
/// that loop all the same (see ``submit(_:)``).
final class EngineExecutor: Sendable {
    /// The engine's loop.
    let loop: any EventLoop
    private let groupCommit: NIOLoopBoundBox<GroupCommit<PreparedNotification>>
    /// The batch's replies for the connections' loops, handed over together.
    let outbox: NIOLoopBoundBox<ReplyOutbox>
    private let persistence: StatePersistence
    private let publisher: ProgressPublisher
    private let queued = Atomic<Int>(0)
    /// Batches sent to the loop and not started yet.
    private let queuedBatches = Atomic<Int>(0)

    init(loop: any EventLoop, groupCommit: NIOLoopBoundBox<GroupCommit<PreparedNotification>>, persistence: StatePersistence, publisher: ProgressPublisher) {
        self.loop = loop
        self.groupCommit = groupCommit
        outbox = NIOLoopBoundBox.makeBoxSendingValue(ReplyOutbox(), as: ReplyOutbox.self, eventLoop: loop)
        self.persistence = persistence
        self.publisher = publisher
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

    /// A request's work and whether its batch may leave its commit to the next one: only
    /// requests whose every effect is in the progress model (``RPCMethod/defersCommit``), so
    /// that a restart answering a held reply -32006 ("nothing of it was kept") is true.
    struct Job: Sendable {
        let run: @Sendable () -> Void
        let defersCommit: Bool
    }

    /// The job of a request that holds a place in the queue: runs `work`; when it completes,
    /// gives the place back, publishes what the request changed, then `deliver`s the outcome:
    /// at once, or after the batch's commit when it runs inside one.
    func job(
        _ work: @escaping @Sendable () -> EventLoopFuture<MacroValue>, defersCommit: Bool,
        progress: InFlightRequests.StartFlag? = nil,
        deliver: @escaping @Sendable (Result<MacroValue, any Error>) -> Void
    ) -> Job {
        Job(
            run: { [self] in
                progress?.set()
                work().whenComplete { [self] outcome in
                    progress?.finish()
                    queued.subtract(1, ordering: .relaxed)
                    publisher.publishIfChanged()
                    let commit = groupCommit.value
                    if commit.isOpen { commit.hold { deliver(outcome) } } else { deliver(outcome) }
                }
            }, defersCommit: defersCommit)
    }

    /// Runs `jobs` on the engine's loop as one batch.
    func submit(_ jobs: [Job]) {
        guard !jobs.isEmpty else { return }
        // Always as a task, even from the engine's own loop (`io_thread: engine`): the
        // connections' events of one wake-up are all read first, so their batches queue up
        // behind each other and share one journal append (the group commit), and JavaScript
        // never runs inside an I/O event: what ``BusyControl`` reads from a socket while it runs
        // is then never announced to the loop as still readable. From the loop itself a task
        // is no wake-up.
        queuedBatches.add(1, ordering: .relaxed)
        loop.execute { [self] in
            queuedBatches.subtract(1, ordering: .relaxed)
            runBatch(jobs)
        }
    }

    /// One batch on the engine's loop: the jobs in order, then the group commit; the replies it
    /// releases leave in one task per connection loop.
    private func runBatch(_ jobs: [Job]) {
        let moreQueued = queuedBatches.load(ordering: .relaxed) > 0 && jobs.allSatisfy(\.defersCommit)
        outbox.value.collecting { runCommitted(jobs, moreQueued: moreQueued) }
    }

    private func runCommitted(_ jobs: [Job], moreQueued: Bool) {
        groupCommit.value.run(
            {
                for job in jobs { job.run() }
            }, moreQueued: moreQueued,
            commit: { [persistence] changed in
                if changed { persistence.append() }
            },
            publish: { [publisher] in
                publisher.publish($0)
            },
            released: { [outbox] in
                outbox.value.flush()
            })
    }
}
