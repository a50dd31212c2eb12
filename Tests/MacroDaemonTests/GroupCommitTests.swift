import MacroEngineCore
import MacroRPC
import Testing

@testable import MacroDaemon

/// ``GroupCommit``: one journal append per batch, or per run of batches queued behind each other.
@Suite struct GroupCommitTests {
    /// What a commit did, in order.
    final class Trace {
        var events: [String] = []
    }

    /// Carries out what a commit hands back, as ``EngineLane`` does: the append, then segment by
    /// segment its notifications, its replies and the outbox's flush ("released").
    func carryOut(_ release: GroupCommit<MacroValue, String>.Release?, _ trace: Trace) {
        guard let release else { return }
        trace.events.append("append changed=\(release.changed)")
        for segment in release.segments {
            for notification in segment.notifications { trace.events.append("notify \(notification.stringValue ?? "")") }
            for reply in segment.replies { trace.events.append("reply \(reply)") }
            trace.events.append("released")
        }
    }

    /// One batch whose request changed the model and holds reply `name`.
    func batch(_ commit: GroupCommit<MacroValue, String>, _ trace: Trace, _ name: String, moreQueued: Bool) {
        commit.begin()
        commit.modelChanged(notification: .string(name))
        commit.hold(name)
        carryOut(commit.end(moreQueued: moreQueued), trace)
    }

    @Test func aLoneBatchCommitsAtItsEndThenNotifiesThenReplies() {
        let commit = GroupCommit<MacroValue, String>(), trace = Trace()
        batch(commit, trace, "a", moreQueued: false)
        #expect(trace.events == ["append changed=true", "notify a", "reply a", "released"])
        #expect(!commit.isOpen)
    }

    @Test func batchesQueuedBehindEachOtherShareOneAppend() {
        let commit = GroupCommit<MacroValue, String>(), trace = Trace()
        batch(commit, trace, "a", moreQueued: true)
        batch(commit, trace, "b", moreQueued: true)
        #expect(trace.events.isEmpty)
        #expect(commit.isOpen)
        // A change outside a batch (a timer) while the commit is deferred waits for it too.
        commit.modelChanged(notification: .string("timer"))
        batch(commit, trace, "c", moreQueued: false)
        // Released batch by batch, as a commit per batch would have: a batch's replies before the
        // next batch's notifications.
        #expect(
            trace.events == [
                "append changed=true", "notify a", "reply a", "released", "notify b", "reply b", "released",
                "notify timer", "released", "notify c", "reply c", "released",
            ])
        #expect(!commit.isOpen)
    }

    @Test func whatHappensBetweenTwoBatchesIsReleasedBeforeTheSecond() {
        let commit = GroupCommit<MacroValue, String>(), trace = Trace()
        batch(commit, trace, "a", moreQueued: true)
        // A promise settles between the batches: its change and its reply.
        commit.modelChanged(notification: .string("settled"))
        commit.hold("settled")
        batch(commit, trace, "b", moreQueued: false)
        #expect(
            trace.events == [
                "append changed=true", "notify a", "reply a", "released",
                "notify settled", "reply settled", "released", "notify b", "reply b", "released",
            ])
    }

    /// Only requests whose every effect is in the progress model may wait for another batch's
    /// commit: a restart answers a held reply -32006 "nothing of it was kept".
    @Test func onlyModelOnlyMethodsDeferTheirCommit() {
        let deferring = RPCMethod.allCases.filter(\.defersCommit).map(\.rawValue).sorted()
        #expect(
            deferring == [
                "audit.recent", "engine.status", "log.recent", "macro.call", "macro.check", "macro.diff", "macro.history", "macro.list", "macro.running",
                "macro.source", "macro.triggers", "macro.types", "progress.get", "progress.set", "run.get", "run.list", "store.delete", "store.get",
                "store.list", "store.set",
            ])
    }

    @Test func aCommitIsDeferredAtMost32BatchesInARow() {
        let commit = GroupCommit<MacroValue, String>(), trace = Trace()
        for i in 0..<GroupCommit<MacroValue, String>.maximumDeferred { batch(commit, trace, "\(i)", moreQueued: true) }
        #expect(trace.events.isEmpty)
        batch(commit, trace, "last", moreQueued: true)
        #expect(trace.events.filter { $0.hasPrefix("append") } == ["append changed=true"])
        #expect(trace.events.filter { $0.hasPrefix("reply") }.count == GroupCommit<MacroValue, String>.maximumDeferred + 1)
        #expect(trace.events.filter { $0 == "released" }.count == GroupCommit<MacroValue, String>.maximumDeferred + 1)
        #expect(trace.events.suffix(2) == ["reply last", "released"])
        #expect(!commit.isOpen)
    }

    @Test func aBatchThatChangedNothingAppendsNothing() {
        let commit = GroupCommit<MacroValue, String>(), trace = Trace()
        commit.begin()
        commit.hold("r")
        carryOut(commit.end(moreQueued: false), trace)
        #expect(trace.events == ["append changed=false", "reply r", "released"])
    }
}
