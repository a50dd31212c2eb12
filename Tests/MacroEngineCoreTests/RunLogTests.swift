import Foundation
import MacroBase
import MacroEngineCore
import MacroTestSupport
import Testing

/// The run log: its bounds, its file, and what it keeps of a run once the run has ended.
@Suite("The run log")
struct RunLogTests {
    private static func log(_ limits: RunLog.Limits) throws -> (MacroEngine, RunLog) {
        let (engine, model, _) = try makeEngine()
        let store = MacroStore()
        try engine.add(store)
        let runs = RunLog(model: model, store: store, limits: limits)
        engine.runLog = runs
        return (engine, runs)
    }

    private static func run(_ engine: MacroEngine, _ name: String) throws -> MacroFunction {
        try engine.setMethod(javascript: name == "bad" ? "function bad(s) { throw new Error(s) }" : "function good(s) { return s }", key: name)
    }

    @Test func pastTheBytesTheOldestSuccessGoesFirst() throws {
        let (engine, runs) = try Self.log(RunLog.Limits(perMacro: 100, failedPerMacro: 100, bytes: 64 << 10))
        let good = try Self.run(engine, "good"), bad = try Self.run(engine, "bad")
        let text = MacroValue.string(String(repeating: "x", count: 4000))
        for _ in 0..<5 { _ = try? bad.call([text]) }
        for _ in 0..<40 { _ = try good.call([text]) }
        let kept = runs.list()
        // Every failure is kept; the successes fill what is left of 64 KiB.
        #expect(kept.filter(\.failed).count == 5)
        #expect(kept.filter { !$0.failed }.count < 40)
        #expect(runs.count.bytes <= 64 << 10)
        #expect(kept.filter { !$0.failed }.last?.id == 45)
    }

    @Test func recordsAreSavedAndLoadedWithTheirIdsGoingOn() throws {
        let directory = TemporaryDirectory(prefix: "runlog")
        let (engine, runs) = try Self.log(RunLog.Limits())
        let good = try Self.run(engine, "good"), bad = try Self.run(engine, "bad")
        _ = try good.call(["a"])
        _ = try? bad.call(["b"])
        try runs.save(to: directory.url("runs.jsonl"))
        _ = try directory.write("runs.jsonl", try directory.read("runs.jsonl") + "not json\n")
        let (other, loaded) = try Self.log(RunLog.Limits())
        #expect(loaded.load(from: directory.url("runs.jsonl")) == (2, 1))
        #expect(loaded.list().map { $0.json } == runs.list().map { $0.json })
        _ = try Self.run(other, "good").call(["c"])
        #expect(loaded.list().map(\.id) == [1, 2, 3])
    }

    @Test func aTimerARunLeavesBehindDoesNotWriteIntoItsRecord() throws {
        let (engine, runs) = try Self.log(RunLog.Limits())
        let leaves = try engine.setMethod(
            javascript: "function leaves() { setTimeout(function () { console.log('late'); progress.inner = 7 }, 0); return 1 }", key: "leaves")
        let waits = try engine.setMethod(javascript: "function waits() { return sleep(20).then(function () { return progress.inner }) }", key: "waits")
        #expect(try leaves.call([]) == 1)
        // The timer has run by the time `waits` ends (it was due first): it changed the ring...
        #expect(try waits.call([]) == 7)
        // ...but after its run had ended, so the run's record has neither its line nor its change.
        let record = try #require(runs.list(macro: "leaves").first)
        #expect(record.console.isEmpty)
        #expect(record.changes.isEmpty)
        #expect(record.turns.count == 1)
    }

    @Test func anAsyncRunsLastTurnIsInItsRecord() throws {
        let (engine, runs) = try Self.log(RunLog.Limits())
        let later = try engine.setMethod(
            javascript: "async function later(n) { progress.inner = 1; await sleep(1); console.log('after'); progress.inner = n; return n }", key: "later")
        #expect(try later.call([4]) == 4)
        let record = try #require(runs.list(macro: "later").first)
        #expect(record.changes.map { [$0.channel, "\($0.from)", "\($0.to)", "\($0.kept)"] } == [["inner", "0.0", "1.0", "true"], ["inner", "1.0", "4.0", "true"]])
        #expect(record.console.map(\.message) == ["after"])
        #expect(record.turns.count == 2)
        #expect(record.result == 4)
    }

    @Test func withoutALogNothingIsRecorded() throws {
        let (engine, runs) = try Self.log(RunLog.Limits())
        engine.runLog = nil
        _ = try Self.run(engine, "good").call(["a"])
        #expect(runs.list().isEmpty)
    }
}
