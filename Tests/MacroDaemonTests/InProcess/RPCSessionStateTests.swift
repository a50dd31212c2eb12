import MacroDaemon
import Testing

/// The flow control both transports share, without a channel.
@Suite struct RPCSessionStateTests {
    @Test func readsAreHeldAtTheInFlightBoundAndResumeOnceAnAnswerLeaves() {
        var state = RPCSessionState(maxInFlight: 2)
        let first = state.readRequested()
        #expect(first)
        state.admitted()
        state.admitted()
        #expect(!state.mayRead)
        let held = state.readRequested()
        #expect(!held)
        #expect(!state.mayResume(writable: true))
        let closes = state.answered()
        #expect(!closes)
        #expect(state.mayResume(writable: true))
        let taken = state.takeHeldRead(), again = state.takeHeldRead()
        #expect(taken)
        #expect(!again, "a held read is issued once")
    }

    @Test func unsentRepliesHoldReadsLikeRequestsInFlight() {
        var state = RPCSessionState(maxInFlight: 3)
        state.repliesUnsent(3)
        let reads = state.readRequested()
        #expect(!reads)
        state.repliesSent(1)
        #expect(state.mayResume(writable: true))
        #expect(!state.mayResume(writable: false), "a channel that takes no output holds reads")
        let held = state.takeHeldRead()
        #expect(held)
    }

    @Test func aHalfClosedConnectionClosesAfterItsLastAnswer() {
        var state = RPCSessionState(maxInFlight: 64)
        state.admitted()
        state.admitted()
        let early = state.closeInput(), first = state.answered(), last = state.answered()
        #expect(!early, "two requests are unanswered")
        #expect(!first)
        #expect(last)
        var idle = RPCSessionState(maxInFlight: 64)
        let closes = idle.closeInput()
        #expect(closes, "nothing unanswered: close at once")
    }

    @Test func theTransportMayHoldReadsForAReasonOfItsOwn() {
        var state = RPCSessionState(maxInFlight: 64)
        state.heldByTransport = true
        let reads = state.readRequested()
        #expect(!reads)
        state.heldByTransport = false
        let held = state.takeHeldRead()
        #expect(state.mayResume(writable: true) && held)
        let readsWhileFull = state.readRequested(writable: false)
        #expect(!readsWhileFull, "a WebSocket holds reads while its output is full")
    }
}
