import Foundation
import MacroTestSupport
import Synchronization
import Testing

@testable import MacroEngineCore

/// Triggers: schedules on an injected clock, watchers, run modes, pauses, the missed-run policy.
@Suite("Triggers")
struct TriggerTests {
    /// The scheduler's events, awaited by count (a condition, never a sleep).
    final class Runs: Sendable {
        private let condition = NSCondition()
        private let list = Mutex<[TriggerScheduler.Event]>([])

        init(_ scheduler: TriggerScheduler) {
            scheduler.onEvent { [weak self] event in
                guard let self else { return }
                self.condition.lock()
                self.list.withLock { $0.append(event) }
                self.condition.broadcast()
                self.condition.unlock()
            }
        }

        var finished: [(macro: String, kind: String, result: Result<MacroValue, MacroError>)] {
            list.withLock { $0.compactMap { if case .finished(let m, _, let k, _, let r) = $0 { (m, k, r) } else { nil } } }
        }

        var dropped: Int { list.withLock { $0.filter { if case .dropped = $0 { true } else { false } }.count } }

        /// Waits until `count` runs finished (fails after 20 s).
        func waitFinished(_ count: Int, sourceLocation: SourceLocation = #_sourceLocation) {
            let deadline = Date().addingTimeInterval(20)
            condition.lock()
            defer { condition.unlock() }
            while finished.count < count {
                guard condition.wait(until: deadline) else {
                    Issue.record("only \(finished.count) of \(count) runs finished", sourceLocation: sourceLocation)
                    return
                }
            }
        }
    }

    static let start = ISO8601DateFormatter().date(from: "2026-11-28T10:00:30Z")!

    func library(_ dir: TemporaryDirectory, clock: ManualTriggerClock, ledger: String? = nil) throws -> (MacroLibrary, MacroEngine, ProgressModel) {
        let (engine, model, _) = try makeEngine()
        let library = MacroLibrary(directory: dir.path, engine: engine, logger: silentLogger, triggerClock: clock, triggerLedger: ledger)
        return (library, engine, model)
    }

    @Test func anEveryTriggerRunsOnceAPeriodAndACronOneAtTheNextMatchingMinute() throws {
        let dir = TemporaryDirectory()
        try dir.write("tick.js", "export const triggers = [{ every: \"1s\" }];\nexport default function tick(event) { progress.inner += 1; return event.kind; }\n")
        try dir.write(
            "report.js",
            "export const triggers = [{ cron: \"*/5 * * * *\", tz: \"Europe/Paris\" }];\nexport default function report(event) { progress.outer += 1; return event.scheduled; }\n")
        let clock = ManualTriggerClock(start: Self.start)
        let (library, _, model) = try library(dir, clock: clock)
        try library.reload()
        let runs = Runs(library.triggers)
        library.activateTriggers(observing: model)
        #expect(library.triggers.status().map { $0["triggers"][0]["next"] } == ["2026-11-28T10:05:00.000Z", "2026-11-28T10:00:31.000Z"])
        for second in 1...5 {
            clock.advance(by: .seconds(1))
            runs.waitFinished(second)
        }
        #expect(model.valuesByName["inner"] == 5)
        #expect(runs.finished.allSatisfy { $0.macro == "tick" && $0.kind == "every" })
        // The cron trigger: not at 10:04:59, at 10:05:00 (11:05 in Paris).
        for second in 1...264 {
            clock.advance(by: .seconds(1))
            runs.waitFinished(5 + second)
        }
        #expect(model.valuesByName["outer"] == 0)
        clock.advance(by: .seconds(1))
        runs.waitFinished(5 + 265 + 1)
        #expect(model.valuesByName["outer"] == 1)
        #expect(runs.finished.contains { $0.macro == "report" && (try? $0.result.get()) == "2026-11-28T10:05:00.000Z" })
        // By hand, at once.
        let outcome = library.triggers.fire("report", event: ["kind": "manual"])
        guard case .started = outcome else { Issue.record("\(outcome)"); return }
        runs.waitFinished(5 + 265 + 2)
        #expect(model.valuesByName["outer"] == 2)
    }

    @Test func aWatcherRunsOncePerChangeWithTheValuesAndItsOwnWritesDoNotLoop() throws {
        let dir = TemporaryDirectory()
        try dir.write(
            "echo.js",
            "export const triggers = [{ watch: \"inner\" }];\nexport const mode = { mode: \"queued\", max: 100 };\nexport default function echo(event) { progress.inner += 1; return [event.old, event.new]; }\n"
        )
        try dir.write("set.js", "function set(v) { progress.inner = v; }")
        let clock = ManualTriggerClock(start: Self.start)
        let (library, _, model) = try library(dir, clock: clock)
        try library.reload()
        let runs = Runs(library.triggers)
        library.activateTriggers(observing: model)
        try library.call("set", arguments: [3])
        runs.waitFinished(1)
        try library.call("set", arguments: [7])
        runs.waitFinished(2)
        // Its own write (+1 each run) fired nothing: two runs, with the values of each change.
        #expect(runs.finished.map { try? $0.result.get() } == [[0, 3], [4, 7]])
        #expect(model.valuesByName["inner"] == 8)
        #expect(library.triggers.totals("echo")?.fired == 2)
    }

    @Test func aDebouncedWatcherRunsOnceForABurstWithItsFirstOldAndLastNewValue() throws {
        let dir = TemporaryDirectory()
        try dir.write("calm.js", "export const triggers = [{ watch: \"middle\", debounce: \"250ms\" }];\nexport default function calm(event) { return [event.old, event.new]; }\n")
        try dir.write("set.js", "function set(v) { progress.middle = v; }")
        let clock = ManualTriggerClock(start: Self.start)
        let (library, engine, model) = try library(dir, clock: clock)
        try library.reload()
        let runs = Runs(library.triggers)
        library.activateTriggers(observing: model)
        for value in [1, 2, 3] {
            try library.call("set", arguments: [.number(Double(value))])
            // The change reaches the scheduler after its turn, on the engine's loop.
            _ = try engine.evaluate("0")
            clock.advance(by: .milliseconds(100))
        }
        #expect(runs.finished.isEmpty)
        clock.advance(by: .milliseconds(200))
        runs.waitFinished(1)
        #expect(runs.finished.map { try? $0.result.get() } == [[0, 3]])
        // JavaScript paused (the restart budget spent): fires are dropped, counted.
        engine.pauseJavaScript(reason: "test")
        _ = try? library.call("set", arguments: [5])
        #expect(library.triggers.fire("calm", event: ["kind": "every"]) == .dropped(reason: "paused: JavaScript is paused (test)"))
        engine.resumeJavaScript()
    }

    /// A burst of 100 fires while the first run waits (on a gate the test opens).
    func burst(mode: String) throws -> (fired: Int, dropped: Int, failed: Int, completed: Int, results: [String]) {
        let dir = TemporaryDirectory()
        try dir.write(
            "slow.js",
            """
            export const triggers = [{ on: "reload" }];
            export const mode = \(mode);
            export default async function slow(event) {
              await new Promise((resolve) => { (globalThis.gates = globalThis.gates || []).push(resolve); });
              return event.n;
            }
            """)
        let clock = ManualTriggerClock(start: Self.start)
        let (library, engine, _) = try library(dir, clock: clock)
        try library.reload()
        let runs = Runs(library.triggers)
        library.activateTriggers(observing: nil)
        for n in 0..<100 { library.triggers.fire("slow", event: ["kind": "burst", "n": .number(Double(n))]) }
        // Open the gates until nothing runs or waits.
        while true {
            let open = try engine.evaluate("(globalThis.gates || []).splice(0).map((r) => r()).length")
            let status = library.triggers.status().first ?? .null
            if open == 0, status["running"] == 0, status["queued"] == 0 { break }
            if open == 0 { _ = try engine.evaluate("0") }
        }
        let totals = try #require(library.triggers.totals("slow"))
        runs.waitFinished(totals.fired)
        let results = runs.finished.map { run -> String in
            switch run.result {
            case .success(let value): return value.jsonText(pretty: false)
            case .failure(let error): return error.code.description
            }
        }
        return (totals.fired, totals.dropped, totals.failed, totals.completed, results)
    }

    @Test func eachRunModeUnderABurstOf100GivesItsCounts() throws {
        let single = try burst(mode: "\"single\"")
        #expect(single.fired == 1 && single.dropped == 99 && single.failed == 0 && single.results == ["0"])
        let queued = try burst(mode: "{ mode: \"queued\", max: 10 }")
        #expect(queued.fired == 11 && queued.dropped == 89 && queued.failed == 0)
        #expect(queued.results == (0...10).map(String.init))
        let parallel = try burst(mode: "{ mode: \"parallel\", max: 10 }")
        #expect(parallel.fired == 10 && parallel.dropped == 90 && parallel.failed == 0)
        #expect(Set(parallel.results) == Set((0..<10).map(String.init)))
        let restart = try burst(mode: "\"restart\"")
        #expect(restart.fired == 100 && restart.dropped == 0 && restart.failed == 99)
        #expect(restart.results.filter { $0 == "cancelled" }.count == 99)
        #expect(restart.results.last == "99")
    }

    @Test func aBrokenOrQuarantinedMacrosTriggersPauseAndResumeWhenFixed() throws {
        let dir = TemporaryDirectory()
        let good = "export const triggers = [{ every: \"1s\" }];\nexport default function tick() { progress.inner += 1; }\n"
        try dir.write("tick.js", good)
        let clock = ManualTriggerClock(start: Self.start)
        let (library, _, model) = try library(dir, clock: clock)
        try library.reload()
        let runs = Runs(library.triggers)
        library.activateTriggers(observing: model)
        clock.advance(by: .seconds(1))
        runs.waitFinished(1)
        try dir.write("tick.js", good.replacingOccurrences(of: "+= 1;", with: "+= ;"))
        library.refresh(filename: "tick.js")
        clock.advance(by: .seconds(3))
        #expect(runs.dropped == 3)
        #expect(library.triggers.status().first?["paused"].stringValue?.hasPrefix("its file does not load") == true)
        // Quarantined: paused too.
        var list = Quarantine()
        list.add(dir.url("tick.js"), hash: Quarantine.hash(Array(good.utf8)), stuckMilliseconds: 5000, macro: "tick")
        library.setQuarantine(list)
        try dir.write("tick.js", good)
        library.refresh(filename: "tick.js")
        clock.advance(by: .seconds(1))
        #expect(runs.dropped == 4)
        #expect(library.triggers.status().first?["paused"].stringValue?.hasPrefix("quarantined") == true)
        // Fixed (a new content): it resumes.
        try dir.write("tick.js", good + "// fixed\n")
        library.refresh(filename: "tick.js")
        clock.advance(by: .seconds(1))
        runs.waitFinished(2)
        #expect(model.valuesByName["inner"] == 2)
    }

    @Test func afterARestartAMissedScheduleRunsOnceOrIsSkipped() throws {
        let dir = TemporaryDirectory()
        let ledger = dir.url("triggers.json")
        try dir.write(
            "once.js", "export const triggers = [{ every: \"10s\", missed: \"once\" }];\nexport default function once(e) { progress.inner += 1; return e.missed === true; }\n")
        try dir.write("skip.js", "export const triggers = [{ every: \"10s\" }];\nexport default function skip(e) { progress.outer += 1; }\n")
        let clock = ManualTriggerClock(start: Self.start)
        do {
            let (library, _, model) = try library(dir, clock: clock, ledger: ledger)
            try library.reload()
            let runs = Runs(library.triggers)
            library.activateTriggers(observing: model)
            clock.advance(by: .seconds(10))
            runs.waitFinished(2)
            library.triggers.stop()
        }
        // Down for a minute, then started again.
        clock.advance(by: .seconds(60))
        let (library, _, model) = try library(dir, clock: clock, ledger: ledger)
        try library.reload()
        let runs = Runs(library.triggers)
        library.activateTriggers(observing: model)
        clock.advance(by: .zero)
        runs.waitFinished(1)
        #expect(runs.finished.map(\.macro) == ["once"], "\(runs.finished.map { ($0.kind, (try? $0.result.get())?.jsonText() ?? "error") })")
        #expect(try runs.finished[0].result.get() == true)
        #expect(model.valuesByName["outer"] == 0)
    }

    @Test func declarationsThatAreNotLiteralsOrNotValidAreRefusedAtTheirPosition() throws {
        let dir = TemporaryDirectory()
        try dir.write("a.js", "const delay = \"5s\";\nexport const triggers = [{ every: delay }];\nexport default function a() {}\n")
        try dir.write("b.js", "export const triggers = [{ every: \"5 parsecs\" }];\nexport default function b() {}\n")
        try dir.write("c.js", "\nexport const triggers = [{ cron: \"61 * * * *\" }];\nexport default function c() {}\n")
        try dir.write("d.js", "export const mode = \"sometimes\";\nexport default function d() {}\n")
        try dir.write("e.js", "export const triggers = [{ watch: \"sideways\" }];\nexport default function e() {}\n")
        try dir.write("f.js", "export const triggers = [{ every: `${1}s` }];\nexport default function f() {}\n")
        let clock = ManualTriggerClock(start: Self.start)
        let (library, _, _) = try library(dir, clock: clock)
        try library.reload()
        func error(_ name: String) -> String {
            guard let error = library.entry(named: name)?.error else { return "ok" }
            return "\(error.line ?? 0):\(error.column ?? 0) \(error.message)"
        }
        #expect(error("a").hasPrefix("2:35 `export const triggers` must be a literal"))
        #expect(error("b") == "1:1 triggers[0]: every takes a number with a unit: \"250ms\", \"5s\", \"2min\"")
        #expect(error("c") == "2:1 triggers[0]: minute '61' is not in 0-59")
        #expect(error("d") == "1:1 mode 'sometimes' is not one of single, restart, queued, parallel")
        #expect(error("e") == "1:1 triggers[0]: watch names a progress channel: inner, middle, outer")
        #expect(error("f").hasPrefix("1:35 `export const triggers` must be a literal"))
    }

    @Test func cronFindsTheNextMinuteAcrossMonthsAndDaylightSaving() throws {
        let paris = TimeZone(identifier: "Europe/Paris")!
        let iso = ISO8601DateFormatter()
        func next(_ expression: String, after: String, previous: String? = nil) throws -> String? {
            try CronSchedule(expression).next(after: iso.date(from: after)!, in: paris, previous: previous.flatMap(iso.date(from:))).map(iso.string(from:))
        }
        #expect(try next("0 9 * * MON", after: "2026-11-28T10:00:00Z") == "2026-11-30T08:00:00Z")
        #expect(try next("30 2 * * *", after: "2026-03-28T12:00:00Z") == "2026-03-29T01:30:00Z")  // 02:30 does not exist: run at 03:30 local
        #expect(try next("30 2 * * *", after: "2026-10-25T00:00:00Z") == "2026-10-25T00:30:00Z")
        #expect(try next("30 2 * * *", after: "2026-10-25T00:30:00Z", previous: "2026-10-25T00:30:00Z") == "2026-10-26T01:30:00Z")  // the repeated hour runs once
        #expect(try next("0 0 31 2 *", after: "2026-01-01T00:00:00Z") == nil)
        #expect(throws: CronError.self) { try CronSchedule("* * *") }
    }
}
