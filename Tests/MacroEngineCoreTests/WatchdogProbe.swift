import MacroEngineCore
import MacroTestSupport
import Testing

@Suite("Time limit after JIT tier-up")
struct TierUpTimeoutTests {
    /// A function called often enough to be compiled by the optimizing tiers must still be
    /// stopped by the time limit (it was not, before the engine turned on polling traps).
    @Test func runawayLoopsAreStoppedEveryTime() throws {
        let (engine, _, _) = try makeEngine()
        try engine.evaluate("function spin(n) { var i = 0; while (true) { i = (i + n) | 0 } }")
        for _ in 0..<40 {
            let error = try #require(throws: MacroError.self) { try engine.call("spin", arguments: [1], timeLimit: .milliseconds(10)) }
            #expect(error.code == .timeout)
        }
        #expect(try engine.evaluate("1 + 1") == 2)
    }
}
