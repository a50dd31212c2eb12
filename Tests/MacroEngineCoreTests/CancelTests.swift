import Foundation
import MacroEngineCore
import MacroTestSupport
import Testing

/// Any call in flight can be cancelled, a runaway one included.
@Suite("Cancelling calls")
struct CancelTests {
    @Test func aRunawaySynchronousMacroIsCancelledAndRolledBack() throws {
        let (engine, model, _) = try makeEngine(timeLimit: .seconds(60))
        try engine.evaluate("function runaway() { progress.inner = 9; while (true) {} }")
        let future = engine.callFuture("runaway", deadline: .seconds(60))
        let call = try runningCall(engine, "runaway")
        #expect(call.macro == "runaway")
        #expect(engine.cancel(call: call.id))
        let error = try #require(throws: MacroError.self) { try future.wait() }
        #expect(error.code == .cancelled)
        #expect(error.message == "cancelled")
        #expect(model.valuesByName["inner"] == 0)
        #expect(engine.runningCalls.isEmpty)
        #expect(try engine.evaluate("1 + 1") == 2)
        #expect(!engine.cancel(call: call.id))
    }

    @Test func anAwaitingMacroIsCancelledAndItsTimersNeverFire() throws {
        let (engine, model, _) = try makeEngine()
        try engine.evaluate("async function waiting() { setTimeout(function () { progress.outer = 5 }, 200); await sleep(5000); progress.inner = 1 }")
        let future = engine.callFuture("waiting")
        let call = try runningCall(engine, "waiting")
        #expect(engine.cancel(call: call.id))
        let error = try #require(throws: MacroError.self) { try future.wait() }
        #expect(error.code == .cancelled)
        // Past the moment its timer would have fired, on the same loop (timers fire in order).
        try engine.evaluate("async function pastIt() { await sleep(350); return progress.outer }")
        #expect(try engine.call("pastIt") == 0)
        #expect(model.valuesByName == ["inner": 0, "middle": 0, "outer": 0])
    }
}
