import MacroEngineCore
import MacroTestSupport
import Synchronization
import Testing

/// A failing turn leaves no partial change, and nobody sees it.
@Suite("Atomic turns")
struct AtomicTurnTests {
    final class ChangeLog: Sendable {
        private let changes = Mutex<[ProgressChange]>([])
        func append(_ change: ProgressChange) { changes.locked { $0.append(change) } }
        func locked<R>(_ body: ([ProgressChange]) -> R) -> R { changes.locked { body($0) } }
    }

    func recording(_ model: ProgressModel) -> ChangeLog {
        let seen = ChangeLog()
        model.addObserver { change in seen.append(change) }
        return seen
    }

    @Test func aThrowingMacroLeavesNoPartialChange() throws {
        let (engine, model, _) = try makeEngine()
        let seen = recording(model)
        try engine.evaluate("function half() { progress.inner = 5; setOuterProgress(7); throw new Error('halfway') }")
        #expect(throws: MacroError.self) { try engine.call("half") }
        #expect(model.valuesByName == ["inner": 0, "middle": 0, "outer": 0])
        #expect(seen.locked { $0 }.isEmpty)
    }

    @Test func aTimedOutTurnIsRolledBack() throws {
        let (engine, model, _) = try makeEngine()
        let seen = recording(model)
        try engine.evaluate("function stuck() { progress.middle = 4; while (true) {} }")
        let error = try #require(throws: MacroError.self) { try engine.call("stuck", timeLimit: .milliseconds(50)) }
        #expect(error.code == .timeout)
        #expect(model.valuesByName == ["inner": 0, "middle": 0, "outer": 0])
        #expect(seen.locked { $0 }.isEmpty)
    }

    @Test func onlyTheFailingTurnSinceTheLastAwaitIsUndone() throws {
        let (engine, model, _) = try makeEngine()
        let seen = recording(model)
        try engine.evaluate(
            """
            async function steps() {
              progress.inner = 1; progress.inner = 2;   // turn 1: coalesced to one change
              await sleep(5);
              progress.outer = 3;                       // turn 2 commits
              await sleep(5);
              progress.outer = 9; progress.middle = 9;  // turn 3 fails: undone
              throw new RangeError('late failure');
            }
            """)
        let error = try #require(throws: MacroError.self) { try engine.call("steps") }
        #expect(error.errorName == "RangeError")
        #expect(model.valuesByName == ["inner": 2, "middle": 0, "outer": 3])
        #expect(
            seen.locked { $0 } == [
                ProgressChange(channel: "inner", oldValue: 0, newValue: 2),
                ProgressChange(channel: "outer", oldValue: 0, newValue: 3),
            ])
    }

    @Test func aRejectedPromiseChainIsRolledBack() throws {
        let (engine, model, _) = try makeEngine()
        try engine.evaluate("function chain() { return Promise.resolve().then(function () { progress.inner = 6; throw new Error('no') }) }")
        #expect(throws: MacroError.self) { try engine.call("chain") }
        #expect(model.valuesByName == ["inner": 0, "middle": 0, "outer": 0])
    }

    @Test func swiftSetsOutsideTurnsAreToldAtOnce() throws {
        let (_, model, _) = try makeEngine()
        let seen = recording(model)
        try model.set("inner", to: 1)
        #expect(seen.locked { $0 } == [ProgressChange(channel: "inner", oldValue: 0, newValue: 1)])
    }

    @Test func unboundedRecursionIsARangeErrorAndTheEngineIsFine() throws {
        let (engine, model, _) = try makeEngine()
        try engine.evaluate("function deep(n) { progress.inner = 1; return deep(n + 1) + 1 }")
        let error = try #require(throws: MacroError.self) { try engine.call("deep", arguments: [0]) }
        #expect(error.errorName == "RangeError")
        #expect(error.message == "Maximum call stack size exceeded.")
        #expect(model.valuesByName["inner"] == 0)
        #expect(try engine.evaluate("1 + 1") == 2)
    }
}
