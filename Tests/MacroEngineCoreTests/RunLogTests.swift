import Foundation
import MacroBase
import MacroEngineCore
import MacroTestSupport
import Synchronization
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

    /// One run cannot push every other record out: a result, an error's message and stack
    /// and the console's text are kept up to their bounds, and a run's turns count in its bytes.
    @Test func aRecordKeepsLargeValuesOnlyUpToTheirBounds() throws {
        let (engine, runs) = try Self.log(RunLog.Limits(perMacro: 100, failedPerMacro: 100, bytes: 4 << 20))
        let big = try engine.setMethod(
            javascript: """
                function big(kind) {
                  const text = 'y'.repeat(100000);
                  if (kind === 'throw') throw new Error(text);
                  if (kind === 'log') { for (let i = 0; i < 10; i++) console.log(text.slice(0, 60000)); return 1 }
                  return text
                }
                """, key: "big")
        let turns = try engine.setMethod(javascript: "async function turns() { for (let i = 0; i < 150; i++) await sleep(0); return 1 }", key: "turns")
        _ = try big.call(["return"])
        _ = try? big.call(["throw"])
        _ = try big.call(["log"])
        _ = try turns.call([])
        let kept = runs.list()
        #expect(kept[0].result == .string("(a result of about 100002 bytes of JSON; a record keeps 65536)"))
        let message = try #require(kept.first { $0.failed }?.error?.message)
        #expect(message.utf8.count < 66_000)
        #expect(message.hasSuffix("\u{2026} [34464 more bytes cut]"), "\(message.suffix(40))")
        let logged = try #require(kept.first { $0.console.count > 0 })
        #expect(logged.console.count == 4)
        #expect(logged.consoleDropped == 6)
        // Each record stays near its bounds; the 150 turns count too.
        #expect(runs.count.bytes < 4 * 65_536 + 400_000, "\(runs.count)")
        let turnsBytes = runs.count.bytes
        _ = try turns.call([])
        #expect(runs.count.bytes - turnsBytes >= 150 * 24)
    }

    @Test func recordsAreSavedAndLoadedWithTheirIdsGoingOn() throws {
        let directory = TemporaryDirectory(prefix: "runlog")
        let (engine, runs) = try Self.log(RunLog.Limits())
        let good = try Self.run(engine, "good"), bad = try Self.run(engine, "bad")
        _ = try good.call(["a"])
        _ = try? bad.call(["b"])
        try runs.save(to: directory.url("runs.jsonl"))
        // A line that is not JSON, and records whose ids macrod never gave (counting on from
        // 2^63 - 1024 overflowed): skipped.
        let saved = try directory.read("runs.jsonl")
        let forged = saved.split(separator: "\n")[0].replacingOccurrences(of: #""id":1,"#, with: #""id":9223372036854774784,"#)
        let negative = saved.split(separator: "\n")[0].replacingOccurrences(of: #""id":1,"#, with: #""id":-3,"#)
        #expect(forged != saved.split(separator: "\n")[0])
        _ = try directory.write("runs.jsonl", saved + "not json\n" + forged + "\n" + negative + "\n")
        let (other, loaded) = try Self.log(RunLog.Limits())
        #expect(loaded.load(from: directory.url("runs.jsonl")) == (2, 3))
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

    /// Past its ring's size a macro's runs reuse the records the ring drops: each kept record
    /// is exactly its own run's, with nothing left over from the run whose place it took.
    @Test func recordsThatTakeADroppedRunsPlaceHoldOnlyTheirOwnRun() throws {
        let (engine, runs) = try Self.log(RunLog.Limits(perMacro: 2, failedPerMacro: 2, bytes: 1 << 20))
        let vary = try engine.setMethod(
            javascript: """
                function vary(n) {
                    if (n % 3 === 0) { console.log('line of ' + n); console.warn('second of ' + n) }
                    if (n % 2 === 0) progress.middle = n % 10
                    if (n === 9) { progress.inner = 9; throw new Error('nine') }
                    if (n % 4 === 3) progress.outer = n % 9
                    return n * 2
                }
                """, key: "vary")
        let heard = Mutex<[RunRecord]>([])
        for n in 1...12 {
            // From the 10th run a listener reads each record as it ends.
            if n == 10 {
                runs.onRecorded = { record in
                    let copy = record(); heard.withLock { $0.append(copy) }
                }
            }
            _ = try? vary.call([.number(Double(n))])
        }
        let kept = runs.list(macro: "vary")
        let ok = kept.filter { !$0.failed }, failed = kept.filter(\.failed)
        #expect(ok.map(\.arguments) == [[11], [12]])
        #expect(ok.map(\.result) == [22, 24])
        #expect(ok.map { $0.console.map(\.message) } == [[], ["line of 12", "second of 12"]])
        #expect(ok.map { $0.changes.map { "\($0.channel) \($0.from)->\($0.to) \($0.kept)" } } == [["outer 7.0->2.0 true"], ["middle 0.0->2.0 true"]])
        #expect(ok.map(\.turns.count) == [1, 1])
        #expect(ok.map(\.id) == [11, 12])
        #expect(ok.allSatisfy { $0.error == nil && $0.storeChanges.isEmpty && $0.origin == "call" })
        #expect(failed.map(\.arguments) == [[9]])
        #expect(failed.first?.error?.message.contains("nine") == true)
        #expect(failed.first?.result == nil)
        #expect(failed.first?.console.map(\.message) == ["line of 9", "second of 9"])
        #expect(failed.first?.changes.map { "\($0.channel) \($0.from)->\($0.to) \($0.kept)" } == ["inner 0.0->9.0 false"])
        #expect(heard.withLock { $0.map(\.arguments) } == [[10], [11], [12]])
        #expect(heard.withLock { $0.map(\.console.count) } == [0, 0, 2])
    }

    /// Up to four numbers are kept in the record itself; every other shape of arguments as it came.
    @Test(
        arguments: [
            [], [1.5], [1, -0.25, 3e300, 4], [1, 2, 3, 4, 5], [1, "two"], ["a", [1, 2], ["k": true], .null, false],
        ] as [[MacroValue]])
    func aRecordKeepsItsArgumentsExactly(_ arguments: [MacroValue]) throws {
        let (engine, runs) = try Self.log(RunLog.Limits(perMacro: 1, failedPerMacro: 1, bytes: 1 << 20))
        let echo = try engine.setMethod(javascript: "function echo(...a) { return a.length }", key: "echo")
        // Twice: the second record takes the first one's place.
        #expect(try echo.call([1, 2]) == 2)
        #expect(try echo.call(arguments) == .number(Double(arguments.count)))
        #expect(runs.list(macro: "echo").map(\.arguments) == [arguments])
    }

    @Test func withoutALogNothingIsRecorded() throws {
        let (engine, runs) = try Self.log(RunLog.Limits())
        engine.runLog = nil
        _ = try Self.run(engine, "good").call(["a"])
        #expect(runs.list().isEmpty)
    }
}
