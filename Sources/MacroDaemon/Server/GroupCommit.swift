import MacroEngineCore
import NIOCore

/// Redis' `beforeSleep`, for the batches of requests run on the engine's loop: while a batch runs,
/// the model changes its requests make are journaled once at the end (the journal's lines hold
/// absolute values, so the last one wins: group commit, one fdatasync under `fsync: always`), and
/// the replies and `progress.changed` notifications of the batch leave only after that append,
/// in order. When more batches are already queued behind one (other connections' reads), its
/// commit may be *deferred* to the end of the next one, up to ``maximumDeferred`` batches: one
/// append for all of them, as Redis writes its AOF once per event-loop iteration. Outside a batch
/// (a promise settling later, a timer) everything happens at once, unless a deferred commit is
/// open, which then takes it along. Confined to the engine's loop.
final class GroupCommit<Notification> {
    /// A reply held until the batch's journal append.
    struct Reply {
        var deliver: () -> Void
    }

    /// Batches whose commit was deferred (at most this many in a row).
    static var maximumDeferred: Int { 32 }

    /// What one batch, or what happened between two batches, holds: its notifications, then its
    /// replies. Released batch by batch, so a connection sees the same order as with a
    /// commit per batch: a batch's replies before the next batch's notifications.
    private struct Segment {
        var notifications: [Notification] = []
        var replies: [Reply] = []
        var isEmpty: Bool { notifications.isEmpty && replies.isEmpty }
    }

    private var depth = 0
    private var deferred = 0
    private var changed = false
    private var segments: [Segment] = [Segment()]

    /// True while a batch runs or its commit is deferred: changes, notifications and replies
    /// wait for the commit.
    var isOpen: Bool { depth > 0 || deferred > 0 }

    /// Runs `body` as (part of) a batch; the outermost one commits when `body` returns:
    /// `commit(changed)` appends the journal if a request changed the model, then, batch by
    /// batch, the held notifications go out through `publish`, the held replies are delivered,
    /// in order, and `released()` is called. `moreQueued`: another batch is already waiting to
    /// run on this loop, so the commit may be left to it (see ``maximumDeferred``).
    func run(
        _ body: () -> Void, moreQueued: Bool = false, commit: (_ changed: Bool) -> Void,
        publish: (Notification) -> Void, released: () -> Void = {}
    ) {
        // What happened since a deferred batch (a promise settling, a timer) is a segment of
        // its own, released before this batch's.
        if depth == 0, deferred > 0, !segments[segments.count - 1].isEmpty { segments.append(Segment()) }
        depth += 1
        body()
        depth -= 1
        guard depth == 0 else { return }
        if moreQueued, deferred < Self.maximumDeferred {
            deferred += 1
            segments.append(Segment())
            return
        }
        deferred = 0
        // A delivery may start the next batch (io_thread: engine): take the lists first.
        let changed = self.changed, segments = self.segments
        self.changed = false
        self.segments = [Segment()]
        commit(changed)
        for segment in segments where !segment.isEmpty {
            for params in segment.notifications { publish(params) }
            for reply in segment.replies { reply.deliver() }
            released()
        }
    }

    /// A request of the batch changed the model; `notification` (nil: nobody subscribed) is the
    /// `progress.changed` to send after the commit.
    func modelChanged(notification: Notification?) {
        changed = true
        if let notification { segments[segments.count - 1].notifications.append(notification) }
    }

    /// Holds a reply until the commit.
    func hold(_ deliver: @escaping () -> Void) { segments[segments.count - 1].replies.append(Reply(deliver: deliver)) }
}
