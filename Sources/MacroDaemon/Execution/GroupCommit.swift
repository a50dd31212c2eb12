/// Redis' `beforeSleep`, for the batches of requests run on the engine's loop: while a batch runs,
/// the model changes its requests make are journaled once at the end (the journal's lines hold
/// absolute values, so the last one wins: group commit, one fdatasync under `fsync: always`), and
/// the replies and `progress.changed` notifications of the batch leave only after that append,
/// in order. When more batches are already queued behind one (other connections' reads), its
/// commit may be *deferred* to the end of the next one, up to ``maximumDeferred`` batches: one
/// append for all of them, as Redis writes its AOF once per event-loop iteration. Outside a batch
/// (a promise settling later, a timer) everything happens at once, unless a deferred commit is
/// open, which then takes it along.
///
/// A state machine without effects of its own: ``begin()`` and ``end(moreQueued:)`` bracket a
/// batch, and `end` hands back what to commit and release (``Release``), which its owner (the
/// ``EngineLane``) carries out. Confined to the engine's loop.
final class GroupCommit<Notification, Reply> {
    /// What one batch, or what happened between two batches, holds: its notifications, then its
    /// replies. Released segment by segment, so a connection sees the same order as with a
    /// commit per batch: a batch's replies before the next batch's notifications.
    struct Segment {
        var notifications: [Notification] = []
        var replies: [Reply] = []
        var isEmpty: Bool { notifications.isEmpty && replies.isEmpty }
    }

    /// What a commit does: append the journal once if `changed`, then release the segments in order.
    struct Release {
        var changed: Bool
        var segments: [Segment]
    }

    /// Batches whose commit was deferred (at most this many in a row).
    static var maximumDeferred: Int { 32 }

    private var depth = 0
    private var deferred = 0
    private var changed = false
    private var segments: [Segment] = [Segment()]

    /// True while a batch runs or its commit is deferred: changes, notifications and replies
    /// wait for the commit.
    var isOpen: Bool { depth > 0 || deferred > 0 }

    /// A batch (or a batch inside one) begins.
    func begin() {
        // What happened since a deferred batch (a promise settling, a timer) is a segment of
        // its own, released before this batch's.
        if depth == 0, deferred > 0, !segments[segments.count - 1].isEmpty { segments.append(Segment()) }
        depth += 1
    }

    /// The batch ends. nil: nothing to do now (an inner batch, or the commit is left to the next
    /// batch because `moreQueued`: another is already waiting to run on this loop). Otherwise
    /// what to commit and release; the state is already reset (a delivery may start the next batch).
    func end(moreQueued: Bool) -> Release? {
        depth -= 1
        guard depth == 0 else { return nil }
        if moreQueued, deferred < Self.maximumDeferred {
            deferred += 1
            segments.append(Segment())
            return nil
        }
        deferred = 0
        let release = Release(changed: changed, segments: segments.filter { !$0.isEmpty })
        changed = false
        segments = [Segment()]
        return release
    }

    /// A request of the batch changed the model; `notification` (nil: nobody subscribed) is the
    /// `progress.changed` to send after the commit.
    func modelChanged(notification: Notification?) {
        changed = true
        if let notification { segments[segments.count - 1].notifications.append(notification) }
    }

    /// Holds a reply until the commit.
    func hold(_ reply: Reply) { segments[segments.count - 1].replies.append(reply) }
}
