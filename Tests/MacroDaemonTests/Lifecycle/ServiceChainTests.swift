import Synchronization
import Testing

@testable import MacroDaemon

/// The order macrod's services start and stop in (``ServiceChain``), with parts that only record
/// what happens to them: no process, no socket, no sleeps.
@Suite("macrod's services: the order of start and shutdown")
struct ServiceChainTests {
    struct StartFailed: Error {}

    /// What happened, in order.
    final class Record: Sendable {
        private let lines = Mutex<[String]>([])
        func add(_ line: String) { lines.withLock { $0.append(line) } }
        var all: [String] { lines.withLock { $0 } }
    }

    /// A part that records its start and stop; it may fail to start, wait for `release` before
    /// its start ends, or stop serving by itself once `servesUntil` opens.
    final class Part: DaemonService {
        let name: String
        let record: Record
        let fails: Bool
        let release: StartGate?
        let servesUntil: StartGate?
        /// Opened once it started; `stopped` once it stopped.
        let started = StartGate(), stopped = StartGate()

        init(_ name: String, _ record: Record, fails: Bool = false, release: StartGate? = nil, servesUntil: StartGate? = nil) {
            self.name = name
            self.record = record
            self.fails = fails
            self.release = release
            self.servesUntil = servesUntil
        }

        func start() async throws {
            if let release { _ = await release.wait() }
            record.add("start \(name)")
            if fails { throw StartFailed() }
            started.open()
        }

        func serve() async {
            if let servesUntil { _ = await servesUntil.wait() } else { await waitForShutdown() }
        }

        func stop() {
            record.add("stop \(name)")
            stopped.open()
        }
    }

    @Test func theServicesStartInOrderAndStopInReverse() async throws {
        let record = Record()
        let a = Part("a", record), b = Part("b", record), c = Part("c", record)
        var chain = ServiceChain()
        for part in [a, b, c] { chain.append(part) }
        let group = chain.group()
        async let run: Void = group.run()
        _ = await c.started.wait()
        await group.triggerGracefulShutdown()
        try await run
        #expect(record.all == ["start a", "start b", "start c", "stop c", "stop b", "stop a"])
    }

    /// As when the dashboard or the socket cannot listen: nothing after it starts, what started
    /// stops in reverse, and its error is the group's.
    @Test func aServiceThatCannotStartStopsTheOnesBeforeIt() async throws {
        let record = Record()
        var chain = ServiceChain()
        for part in [Part("a", record), Part("b", record, fails: true), Part("c", record)] { chain.append(part) }
        await #expect(throws: StartFailed.self) { try await chain.group().run() }
        #expect(record.all == ["start a", "start b", "stop a"])
    }

    /// The state save: stopped in its place in the chain, started only once the socket listens.
    @Test func aServiceCanStartAfterOneItStopsBefore() async throws {
        let record = Record()
        let a = Part("a", record), save = Part("save", record), b = Part("b", record), listener = Part("listener", record)
        var chain = ServiceChain()
        chain.append(a)
        chain.append(save, startingAfter: listener)
        chain.append(b)
        chain.append(listener)
        let group = chain.group()
        async let run: Void = group.run()
        _ = await save.started.wait()
        await group.triggerGracefulShutdown()
        try await run
        #expect(record.all == ["start a", "start b", "start listener", "start save", "stop listener", "stop b", "stop save", "stop a"])
    }

    /// A macrod that never listened neither saves the state nor removes the socket file.
    @Test func aServiceStartingAfterOneThatFailedNeverStartsNorStops() async throws {
        let record = Record()
        var chain = ServiceChain()
        let listener = Part("listener", record, fails: true)
        chain.append(Part("a", record))
        chain.append(Part("save", record), startingAfter: listener)
        chain.append(Part("b", record))
        chain.append(listener)
        await #expect(throws: StartFailed.self) { try await chain.group().run() }
        #expect(record.all == ["start a", "start b", "start listener", "stop b", "stop a"])
    }

    /// SIGTERM while a restarted macrod starts: it still listens and adopts what was handed over
    /// (the later services start) before anything stops.
    @Test func aShutdownDuringTheStartLetsTheStartFinish() async throws {
        let record = Record()
        let release = StartGate()
        let a = Part("a", record), b = Part("b", record, release: release), c = Part("c", record)
        // Last in the chain, so the first told to stop; it starts right after `a`.
        let last = Part("last", record)
        var chain = ServiceChain()
        chain.append(a)
        chain.append(b)
        chain.append(c)
        chain.append(last, startingAfter: a)
        let group = chain.group()
        async let run: Void = group.run()
        _ = await last.started.wait()
        await group.triggerGracefulShutdown()
        _ = await last.stopped.wait()
        release.open()
        try await run
        #expect(record.all.filter { !$0.hasSuffix("last") } == ["start a", "start b", "start c", "stop c", "stop b", "stop a"])
        let lines = record.all
        #expect(try #require(lines.firstIndex(of: "stop last")) < #require(lines.firstIndex(of: "start b")))
    }

    /// As the socket listener does when a shutdown was carried over an engine restart.
    @Test func aServiceThatStopsServingByItselfShutsTheGroupDown() async throws {
        let record = Record()
        let c = Part("c", record)
        var chain = ServiceChain()
        for part in [Part("a", record), Part("b", record, servesUntil: c.started), c] { chain.append(part) }
        try await chain.group().run()
        #expect(record.all == ["start a", "start b", "start c", "stop b", "stop c", "stop a"])
    }

    @Test func aCancelledWaitOnAStartGateReturnsFalse() async {
        let gate = StartGate()
        let waiting = Task { await gate.wait() }
        waiting.cancel()
        #expect(await waiting.value == false)
        gate.open()
        #expect(await gate.wait() == true)
        #expect(gate.isOpen)
    }
}
