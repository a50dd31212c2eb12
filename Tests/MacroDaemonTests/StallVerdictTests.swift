import Glibc
import MacroEngineCore
import Testing

@testable import MacroDaemon

/// The stall restart's verdict, a pure function of the stall and what earlier restarts knew:
/// who answers for a stall (a file stuck while it loads, a macro's code, or nobody), when a file
/// goes into quarantine, and when JavaScript is paused. No process, no clock.
@Suite("The stall verdict")
struct StallVerdictTests {
    static func stall(call: Int = 0, loading: (String, UInt64)? = nil, owner: CodeOwner? = nil, stuck: Int = 7000) -> StallWatch.Stall {
        var occupancy = EngineOccupancy.Snapshot(since: 1, budgetNanoseconds: 5_000_000_000, call: call, loadingFile: loading?.0, cancelledAt: nil)
        occupancy.loadingHash = loading?.1
        occupancy.owner = owner
        return StallWatch.Stall(occupancy: occupancy, stuckMilliseconds: stuck, cancelled: false)
    }

    static func judge(
        _ stall: StallWatch.Stall, _ quarantine: Quarantine = Quarantine(), restarts: [Double] = [], paused: Bool = false, at now: Double, limit: Int = 2
    )
        -> StallRecovery.Verdict
    {
        StallRecovery.judge(stall, quarantine: quarantine, restarts: restarts, paused: paused, now: now, stallQuarantine: limit)
    }

    @Test func aFileStuckWhileItLoadsIsQuarantinedAtOnce() {
        let verdict = Self.judge(Self.stall(loading: ("/m/spin.js", 42), owner: CodeOwner(file: "/m/spin.js", hash: 42, macro: "spin"), stuck: 7100), at: 100)
        #expect(verdict.quarantined?.path == "/m/spin.js")
        #expect(verdict.quarantined?.hash == 42)
        #expect(verdict.quarantined?.macro == "spin")
        #expect(verdict.quarantined?.stuckMilliseconds == 7100)
        #expect(verdict.quarantine.files.map(\.path) == ["/m/spin.js"])
        // A file answers for it: no restart is counted against the budget.
        #expect(verdict.restarts == [])
        #expect(!verdict.paused)
    }

    @Test func aMacrosCodeIsQuarantinedAtItsSecondStallWithinTheWindow() {
        let owner = CodeOwner(file: "/m/loop.js", hash: 7, macro: "loop")
        let first = Self.judge(Self.stall(call: 3, owner: owner), at: 100)
        #expect(first.quarantined == nil)
        #expect(first.quarantine.files.isEmpty)
        let second = Self.judge(Self.stall(call: 4, owner: owner), first.quarantine, at: 100 + StallRecovery.budgetWindow - 1)
        #expect(second.quarantined?.path == "/m/loop.js")
        #expect(second.quarantined?.stalls == 2)
        #expect(second.restarts == [])
        // Past the window the first stall no longer counts.
        let late = Self.judge(Self.stall(call: 4, owner: owner), first.quarantine, at: 100 + StallRecovery.budgetWindow)
        #expect(late.quarantined == nil)
        // Another content of the same file starts afresh.
        let edited = Self.judge(Self.stall(call: 5, owner: CodeOwner(file: "/m/loop.js", hash: 8, macro: "loop")), first.quarantine, at: 101)
        #expect(edited.quarantined == nil)
    }

    @Test func stallsNoFileAnswersForPauseJavaScriptPastTheBudget() {
        var restarts: [Double] = []
        var paused = false
        for index in 0...StallRecovery.budget {
            let verdict = Self.judge(Self.stall(), restarts: restarts, paused: paused, at: 10 + Double(index))
            #expect(verdict.quarantined == nil)
            #expect(verdict.restarts.count == index + 1)
            #expect(verdict.paused == (index + 1 > StallRecovery.budget), "restart \(index + 1)")
            (restarts, paused) = (verdict.restarts, verdict.paused)
        }
        // Restarts older than the window are forgotten; a pause, once on, stays until `engine.resume`.
        let later = Self.judge(Self.stall(), restarts: restarts, paused: paused, at: 10 + StallRecovery.budgetWindow + Double(StallRecovery.budget) + 1)
        #expect(later.restarts.count == 1)
        #expect(later.paused)
    }
}

/// A stop signal that arrived but has not reached the shutdown yet is seen by the restart, which
/// carries the shutdown over instead of losing it in the exec.
@Suite("A pending stop signal")
struct PendingStopSignalTests {
    @Test func aSIGTERMWaitingAtAThreadIsSeenAndNoneWhenTaken() {
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, SIGTERM)
        var previous = sigset_t()
        // Blocked in this thread only, then sent to it: it waits there, as libdispatch's re-raise does.
        pthread_sigmask(SIG_BLOCK, &set, &previous)
        pthread_kill(pthread_self(), SIGTERM)
        let seen = StallRecovery.terminationSignalPending()
        var info = siginfo_t()
        var now = timespec()
        let taken = sigtimedwait(&set, &info, &now)
        pthread_sigmask(SIG_SETMASK, &previous, nil)
        #expect(seen)
        #expect(taken == SIGTERM)
        #expect(!StallRecovery.terminationSignalPending())
    }
}
