import Foundation
import MacroEngineCore
import MacroTestSupport
import Testing

/// Every runaway that the in-process watchdog can see ends at its deadline,
/// wherever the JavaScript runs: at load, while a result is converted, in timers.
@Suite("Runaways in process")
struct RunawayTests {
    /// A macro file whose expression would run code at load (here an endless loop) is refused by
    /// its shape, with its position, without running any of it.
    @Test func aFileThatWouldLoopWhileItLoadsIsRefusedUnrunWithItsPositionAndTheOthersLoad() throws {
        let (engine, _, _) = try makeEngine(timeLimit: .milliseconds(200))
        let dir = TemporaryDirectory(prefix: "runaway")
        try dir.write("spin.js", "// runs while it loads\n(function () {\n  globalThis.RAN = true; for (;;) {}\n})(), function () { return 1 }\n")
        try dir.write("ok.js", "function () { return typeof RAN }")
        let library = MacroLibrary(directory: dir.path, engine: engine, logger: silentLogger)
        let entries = try library.reload()
        let spin = try #require(entries.first { $0.name == "spin" })
        #expect(spin.status == .error)
        #expect(spin.error?.code == .notAFunction)
        #expect(spin.error?.file == dir.url("spin.js"))
        #expect(spin.error?.line == 2)
        #expect(spin.error?.column == 1)
        #expect(spin.error?.message == "a macro file must hold one function expression, e.g. function() { ... }; this one is a sequence (comma) expression (nothing of it was run)")
        #expect(try library.call("ok") == "undefined")
    }

    @Test func aLibFileThatLoopsWhileItLoadsIsStopped() throws {
        let (engine, _, _) = try makeEngine(timeLimit: .milliseconds(200))
        let dir = TemporaryDirectory(prefix: "runaway")
        try dir.write("lib/spin.js", "var x = 1;\nfunction spin() {\n  while (true) {}\n}\nspin();\n")
        try dir.write("ok.js", "function () { return 3 }")
        let library = MacroLibrary(directory: dir.path, engine: engine, logger: silentLogger)
        _ = try library.reload()
        let lib = try #require(library.libEntries.first)
        #expect(lib.status == .error)
        #expect(lib.error?.code == .timeout)
        // The loop that was running, and each caller's call site.
        #expect(lib.error?.line == 3)
        #expect(lib.error?.column == 3)
        #expect(lib.error?.stack == "spin@\(dir.url("lib/spin.js")):3:3\nglobal code@\(dir.url("lib/spin.js")):5:1")
        #expect(try library.call("ok") == 3)
    }

    @Test(arguments: [
        "function () { return { get x() { for (;;) {} } } }",
        "function () { return { a: { b: { get c() { for (;;) {} } } } } }",
        "function () { return [1, { get y() { while (true) {} } }] }",
    ])
    func aResultWhoseConversionLoopsIsStopped(_ source: String) throws {
        let (engine, _, _) = try makeEngine(timeLimit: .milliseconds(200))
        let method = MacroMethod(javascript: source, key: "conv", engine: engine)
        let error = try #require(throws: MacroError.self) { try method.liveFunction!.callFuture([]).wait() }
        #expect(error.code == .timeout)
        #expect(try engine.evaluate("1 + 1") == 2)
    }

    @Test func timersThatReArmThemselvesStopAtTheirCallsDeadline() throws {
        let (engine, _, _) = try makeEngine()
        // The call returns at once; its timer re-arms itself every 0 ms, forever.
        try engine.evaluate("function storm() { function tick() { progress.inner += 0.001; setTimeout(tick, 0) } setTimeout(tick, 0); return 'started' }")
        #expect(try engine.callFuture("storm", deadline: .milliseconds(300)).wait() == "started")
        // The storm must end by itself, at its call's deadline. Timers of one loop fire in order:
        // a timer set now for past that deadline fires after it; from then on a tick that still
        // re-arms at 0 ms would fire before any later timer, so a second one shows none did.
        try engine.evaluate("async function pastIt() { await sleep(350); return progress.inner }")
        let last = try #require(try engine.call("pastIt").doubleValue)
        try engine.evaluate("async function later() { await sleep(50); return progress.inner }")
        #expect(try engine.call("later").doubleValue == last, "the timer storm never stopped")
        #expect(last > 0)
        #expect(try engine.evaluate("'still answering'") == "still answering")
    }

    @Test(arguments: [1, 2])
    func anAwaitLoopOfLongJobsStoppedWhileDrainingFailsAndIsRolledBack(_ loops: Int) throws {
        let (engine, model, _) = try makeEngine(timeLimit: .milliseconds(200))
        // Jobs of 15 ms: the watchdog sees them (they pass its 10 ms tick) and stops one while
        // JavaScriptCore drains promise jobs, which then returns as if the call had succeeded.
        try engine.evaluate(
            """
            function longJobs(n) {
              async function loop(channel) { for (;;) { await null; progress[channel] = 5; var t = Date.now(); while (Date.now() - t < 15) {} } }
              loop("inner"); if (n > 1) loop("outer");
              return new Promise(function () {});
            }
            """)
        let error = try #require(throws: MacroError.self) {
            try engine.callFuture("longJobs", arguments: [.number(Double(loops))], deadline: .seconds(3)).wait()
        }
        #expect(error.code == .timeout)
        #expect(model.valuesByName == ["inner": 0, "middle": 0, "outer": 0])
        #expect(try engine.evaluate("'still answering'") == "still answering")
    }

    @Test func theStallVerdictUsesTheBudgetThenTheCancel() {
        let ms: UInt64 = 1_000_000
        let busy = EngineOccupancy.Snapshot(since: 1000 * ms, budgetNanoseconds: 300 * ms, call: 7, loadingFile: nil, cancelledAt: nil)
        #expect(StallWatch.verdict(busy, now: 1000 * ms + 799 * ms, graceNanoseconds: 500 * ms) == nil)
        let stall = StallWatch.verdict(busy, now: 1000 * ms + 801 * ms, graceNanoseconds: 500 * ms)
        #expect(stall?.stuckMilliseconds == 801)
        #expect(stall?.cancelled == false)
        var cancelled = busy
        cancelled.cancelledAt = 1100 * ms
        #expect(StallWatch.verdict(cancelled, now: 1599 * ms, graceNanoseconds: 500 * ms) == nil)
        #expect(StallWatch.verdict(cancelled, now: 1601 * ms, graceNanoseconds: 500 * ms)?.cancelled == true)
        let idle = EngineOccupancy.Snapshot(since: nil, budgetNanoseconds: 0, call: 0, loadingFile: nil, cancelledAt: nil)
        #expect(StallWatch.verdict(idle, now: .max / 2, graceNanoseconds: 0) == nil)
    }
}
