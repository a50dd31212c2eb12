import MacroEngineCore
import MacroTestSupport
import Testing

/// Unbounded allocation is stopped before the memory cap.
@Suite("Memory limit")
struct MemoryLimitTests {
    @Test func anAllocatingMacroIsStoppedAndTheEngineGoesOn() throws {
        let engine = MacroEngine(configuration: .init(timeLimit: .seconds(60), memoryLimit: 64 << 20), logger: silentLogger)
        let model = ProgressModel()
        try engine.add(model)
        try engine.evaluate("function hog() { progress.inner = 3; var a = []; for (;;) a.push(new Array(1e6).fill(1)) }")
        let error = try #require(throws: MacroError.self) { try engine.call("hog", timeLimit: .seconds(60)) }
        #expect(error.code == .memoryLimit)
        #expect(error.message.hasSuffix("over the 64 MiB limit (memory_limit_mb)"))
        #expect(model.valuesByName["inner"] == 0)
        #expect(try engine.evaluate("[1, 2, 3].length") == 3)
    }
}

/// The verdict judges live memory, so a stop leaves nothing behind.
@Suite("Memory limit without aftermath")
struct MemoryAftermathTests {
    @Test(arguments: [
        "var a = []; for (;;) a.push(new Array(1e5).fill({x: 1}))",
        "var a = []; for (;;) a.push(new Uint8Array(1 << 20).fill(1))",
        "var a = []; for (;;) a.push('x'.repeat(1 << 20) + a.length)",
    ])
    func afterAMemoryStopLongMacrosRunNormally(_ bomb: String) throws {
        let engine = MacroEngine(configuration: .init(timeLimit: .seconds(60), memoryLimit: 64 << 20), logger: silentLogger)
        try engine.evaluate("function bomb() { \(bomb) }")
        // 50 ms of allocating work: far longer than the watchdog's 10 ms tick.
        try engine.evaluate(
            "function work() { var t = Date.now(), n = 0; while (Date.now() - t < 50) { var g = []; for (var i = 0; i < 100; i++) g.push({i: i}); n += g.length } return n > 0 }")
        let error = try #require(throws: MacroError.self) { try engine.call("bomb", timeLimit: .seconds(60)) }
        #expect(error.code == .memoryLimit)
        var failures: [String] = []
        for _ in 0..<100 {
            do {
                if try engine.call("work") != true { failures.append("wrong result") }
            } catch {
                failures.append("\(error)")
            }
        }
        #expect(failures == [])
    }

    @Test func aMacroKeepingALargeLiveStateIsNeverStopped() throws {
        let engine = MacroEngine(configuration: .init(timeLimit: .seconds(60), memoryLimit: 256 << 20), logger: silentLogger)
        // 100 MiB kept alive, then a second of churn on top of it.
        try engine.evaluate("var kept = []; for (var i = 0; i < 100; i++) kept.push(new Uint8Array(1 << 20).fill(i))")
        try engine.evaluate(
            "function churn() { var t = Date.now(), n = 0; while (Date.now() - t < 1000) { var g = new Array(1000).fill({n: n}); n += g.length } return kept.length }")
        for _ in 0..<3 { #expect(try engine.call("churn", timeLimit: .seconds(60)) == 100) }
    }
}
