import Foundation
import MacroEngineCore
import MacroTestSupport
import Testing

/// Any call in flight can be cancelled, a runaway one included.
@Suite("Cancelling calls")
struct CancelTests {
    /// Signals each `console.log('running')`: the macros say so first, so once it came the call
    /// runs (and is listed).
    func announcing(_ engine: MacroEngine) -> DispatchSemaphore {
        let running = DispatchSemaphore(value: 0)
        engine.consoleHandler = { if $0.message == "running" { running.signal() } }
        return running
    }

    /// The call of `name`, once it said it runs (5 s at most).
    func waitForRunning(_ engine: MacroEngine, _ name: String, _ running: DispatchSemaphore) throws -> RunningCall {
        guard running.wait(timeout: .now() + 5) == .success, let call = engine.runningCalls.first(where: { $0.macro == name }) else {
            throw MacroError(code: .noSuchMacro, message: "\(name) never showed up as running")
        }
        return call
    }

    @Test func aRunawaySynchronousMacroIsCancelledAndRolledBack() throws {
        let (engine, model, _) = try makeEngine(timeLimit: .seconds(60))
        let running = announcing(engine)
        try engine.evaluate("function runaway() { console.log('running'); progress.inner = 9; while (true) {} }")
        let future = engine.callFuture("runaway", deadline: .seconds(60))
        let call = try waitForRunning(engine, "runaway", running)
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
        let running = announcing(engine)
        try engine.evaluate(
            "async function waiting() { console.log('running'); setTimeout(function () { progress.outer = 5 }, 200); await sleep(5000); progress.inner = 1 }")
        let future = engine.callFuture("waiting")
        let call = try waitForRunning(engine, "waiting", running)
        #expect(engine.cancel(call: call.id))
        let error = try #require(throws: MacroError.self) { try future.wait() }
        #expect(error.code == .cancelled)
        // Past the moment its timer would have fired, on the same loop (timers fire in order).
        try engine.evaluate("async function pastIt() { await sleep(350); return progress.outer }")
        #expect(try engine.call("pastIt") == 0)
        #expect(model.valuesByName == ["inner": 0, "middle": 0, "outer": 0])
    }
}
