import MacroEngineCore
import MacroTestSupport
import Testing

/// Issue #5, guarantee 3: unbounded allocation is stopped before the memory cap.
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
