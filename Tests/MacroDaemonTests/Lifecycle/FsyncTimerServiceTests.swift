import NIOCore
import NIOEmbedded
import NIOPosix
import Synchronization
import Testing

@testable import MacroDaemon

/// `fsync: interval`'s timer (``FsyncTimerService``) alone, on a test loop's virtual clock, and
/// in the chain with the event loops it runs on.
@Suite("macrod's fsync timer")
struct FsyncTimerServiceTests {
    @Test func itSyncsOncePerPeriodUntilItStops() async {
        let loop = NIOAsyncTestingEventLoop()
        let syncs = Atomic<Int>(0)
        let timer = FsyncTimerService(loop: loop, period: .seconds(1)) { syncs.add(1, ordering: .relaxed) }
        timer.start()
        await loop.advanceTime(by: .milliseconds(999))
        #expect(syncs.load(ordering: .relaxed) == 0)
        await loop.advanceTime(by: .milliseconds(1))
        #expect(syncs.load(ordering: .relaxed) == 1)
        await loop.advanceTime(by: .seconds(1))
        #expect(syncs.load(ordering: .relaxed) == 2)
        await timer.stop()
        await loop.advanceTime(by: .seconds(10))
        #expect(syncs.load(ordering: .relaxed) == 2)
        await loop.shutdownGracefully()
    }

    @Test func withAnotherFsyncPolicyItNeverRuns() async {
        let loop = NIOAsyncTestingEventLoop()
        let syncs = Atomic<Int>(0)
        let timer = FsyncTimerService(loop: loop, period: nil) { syncs.add(1, ordering: .relaxed) }
        timer.start()
        await loop.advanceTime(by: .seconds(60))
        await timer.stop()
        #expect(syncs.load(ordering: .relaxed) == 0)
        await loop.shutdownGracefully()
    }

    /// In macrod's order (the loops, then the timer): graceful shutdown stops the timer while its
    /// loop still runs, and only then shuts the loop down. Stopped after the loop had shut down,
    /// the timer's cancel would be scheduled on a dead loop and never acknowledged: the group would
    /// not finish within the time limit.
    // The limit catches a hang, not slowness: in the whole suite, on two cores, the synchronous
    // tests that wait on a daemon can hold both threads of Swift's cooperative pool for minutes,
    // and this test (and the limit's own check) then waits its turn: it once "failed" its one
    // minute after 222 s of waiting to run.
    @Test(.timeLimit(.minutes(10))) func itIsCancelledBeforeTheLoopsShutDown() async throws {
        let loops = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = loops.next()
        let ran = StartGate()
        let timer = FsyncTimerService(loop: loop, period: .milliseconds(1)) { ran.open() }
        var chain = ServiceChain()
        chain.append(EventLoopsService(loops))
        chain.append(timer)
        let group = chain.group()
        async let run: Void = group.run()
        #expect(await ran.wait())
        await group.triggerGracefulShutdown()
        try await run
    }
}
