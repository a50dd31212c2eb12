import Foundation
import MacroEngineCore
import MacroTestSupport
import Testing

@Suite("Debug sessions: breakpoints, stepping, variables, evaluate")
struct DebugSessionTests {
    @Test func stopOnEntryThenStepOverIntoAndOutOfALibHelper() async throws {
        let h = try DebugHarness()
        try h.launch("main", [3], stopOnEntry: true)
        h.session.start()
        #expect(h.position(try await h.nextStop()) == "main.js:2:5 entry")
        try await h.session.request("next")
        #expect(h.position(try await h.nextStop()) == "main.js:3:5 step")
        try await h.session.request("next")
        #expect(h.position(try await h.nextStop()) == "main.js:4:9 step")
        try await h.session.request("stepIn")
        #expect(h.position(try await h.nextStop()) == "lib/helpers.js:2:5 step")
        let stack = try await h.session.request("stackTrace")
        let frames = stack["frames"].arrayValue ?? []
        #expect(frames.map { h.position($0) } == ["lib/helpers.js:2:5", "main.js:4:9"])
        #expect(frames.map { $0["name"] } == ["double", "main"])
        #expect(try await h.variables(try await h.localsRef(frame: frames[0]["id"])) == ["x": "0", "y": "undefined"])
        #expect(try await h.variables(try await h.localsRef(frame: frames[1]["id"])) == ["n": "3", "total": "0", "more": "<uninitialized>", "i": "0"])
        try await h.session.request("next")
        #expect(h.position(try await h.nextStop()) == "lib/helpers.js:3:5 step")
        try await h.session.request("stepOut")
        // Back in main at the loop's body, for i = 1.
        #expect(h.position(try await h.nextStop()) == "main.js:4:9 step")
        try await h.session.request("continue")
        let outcome = try await h.outcome()
        #expect(outcome.result == 7)
        #expect(outcome.changes == [.init(channel: "inner", from: 0, to: 7)])
    }

    @Test func steppingOverAnAwaitStaysInTheAsyncFunction() async throws {
        let h = try DebugHarness()
        try h.launch("main", [3])
        #expect(h.session.setBreakpoints(path: h.path("main.js"), [.init(line: 6)]).map(\.line) == [6])
        h.session.start()
        #expect(h.position(try await h.nextStop()) == "main.js:6:5 breakpoint")
        try await h.session.request("next")
        #expect(h.position(try await h.nextStop()) == "main.js:7:5 step")
        try await h.session.request("continue")
        #expect(try await h.outcome().result == 7)
    }

    @Test func steppingIntoAnAsyncLibHelperAndOverItsAwait() async throws {
        let h = try DebugHarness()
        try h.launch("main", [3])
        _ = h.session.setBreakpoints(path: h.path("main.js"), [.init(line: 6)])
        h.session.start()
        #expect(h.position(try await h.nextStop()) == "main.js:6:5 breakpoint")
        try await h.session.request("stepIn")
        #expect(h.position(try await h.nextStop()) == "lib/helpers.js:6:5 step")
        try await h.session.request("next")
        #expect(h.position(try await h.nextStop()) == "lib/helpers.js:7:5 step")
        try await h.session.request("next")
        // later returned: main resumes after its await.
        #expect(h.position(try await h.nextStop()) == "main.js:7:5 step")
        try await h.session.request("continue")
        #expect(try await h.outcome().result == 7)
    }

    @Test func evaluateAndSetVariableInAFrame() async throws {
        let h = try DebugHarness()
        try h.launch("main", [3])
        _ = h.session.setBreakpoints(path: h.path("main.js"), [.init(line: 7)])
        h.session.start()
        let stop = try await h.nextStop()
        #expect(h.position(stop) == "main.js:7:5 breakpoint")
        #expect(stop["hitBreakpointIds"] == [1])
        let frame = stop["id"]
        #expect(try await h.session.request("evaluate", ["expression": "more * 2", "frameId": frame])["value"] == "14")
        #expect(try await h.session.request("evaluate", ["expression": "progress.inner", "frameId": frame])["value"] == "0")
        let locals = try await h.localsRef(frame: frame)
        #expect(try await h.session.request("setVariable", ["ref": locals, "name": "more", "value": "2 + 1"])["value"] == "3")
        await #expect(throws: DebugError.self) { try await h.session.request("evaluate", ["expression": "nope.x", "frameId": frame]) }
        try await h.session.request("continue")
        let outcome = try await h.outcome()
        #expect(outcome.result == 3)
        #expect(outcome.changes == [.init(channel: "inner", from: 0, to: 3)])
    }

    @Test func objectsExpandInVariables() async throws {
        let h = try DebugHarness()
        try h.launch("logs")
        _ = h.session.setBreakpoints(path: h.path("logs.js"), [.init(line: 3)])
        h.session.start()
        let stop = try await h.nextStop()
        let value = try await h.session.request("evaluate", ["expression": "({ a: 1, list: [1, 2, 3], nested: { deep: true } })", "frameId": stop["id"]])
        #expect(value["value"] == "{a: 1, list: […], nested: {…}}")
        let children = try await h.session.request("variables", ["ref": value["ref"]])
        let byName = Dictionary(uniqueKeysWithValues: (children["variables"].arrayValue ?? []).map { ($0["name"].stringValue ?? "", $0) })
        #expect(byName["a"]?["value"] == "1")
        #expect(byName["list"]?["value"] == "Array(3)")
        #expect(try await h.variables(byName["list"]!["ref"]) == ["0": "1", "1": "2", "2": "3"])
        #expect(try await h.variables(byName["nested"]!["ref"]) == ["deep": "true"])
        try await h.session.request("continue")
        _ = try await h.outcome()
        #expect(h.output == [DebugOutput(category: "stdout", text: "hello 1\n")])
    }

    @Test func scopesShowLocalsClosuresAndGlobals() async throws {
        let h = try DebugHarness()
        try h.launch("counter")
        _ = h.session.setBreakpoints(path: h.path("counter.js"), [.init(line: 4, hitCondition: "2")])
        h.session.start()
        let stop = try await h.nextStop()
        #expect(h.position(stop) == "counter.js:4:9 breakpoint")
        let frames = try await h.session.request("stackTrace")["frames"].arrayValue ?? []
        #expect(frames.map { h.position($0) } == ["counter.js:4:9", "counter.js:8:5"])
        #expect(frames.map { $0["name"] } == ["add", "counter"])
        let scopes = try await h.session.request("scopes", ["frameId": frames[0]["id"]])["scopes"].arrayValue ?? []
        #expect(scopes.map { $0["name"] } == ["Locals", "Closure", "Globals"])
        #expect(try await h.variables(scopes[0]["ref"]) == ["step": "3"])
        #expect(try await h.variables(scopes[1]["ref"]) == ["count": "2", "add": "ƒ add()"])
        let globals = try await h.variables(scopes[2]["ref"])
        #expect(globals["double"] == "ƒ double()")
        #expect(globals["main"] == "ƒ main()")
        #expect(globals["progress"] == "{inner: 0, middle: 0, outer: 0}")
        #expect(globals["Math"] == nil)
        // Assigning a closure's variable through the inner frame.
        #expect(try await h.session.request("setVariable", ["ref": scopes[1]["ref"], "name": "count", "value": "100"])["value"] == "100")
        try await h.session.request("continue")
        #expect(try await h.outcome().result == 103)
    }

    @Test func aConditionalBreakpointStopsOnlyWhenTrue() async throws {
        let h = try DebugHarness()
        try h.launch("main", [4])
        let set = h.session.setBreakpoints(path: h.path("main.js"), [.init(line: 4, condition: "i === 2")])
        #expect(set == [.init(id: 1, verified: true, line: 4, column: 9)])
        h.session.start()
        let stop = try await h.nextStop()
        #expect(h.position(stop) == "main.js:4:9 breakpoint")
        #expect(try await h.session.request("evaluate", ["expression": "i", "frameId": stop["id"]])["value"] == "2")
        try await h.session.request("continue")
        #expect(try await h.outcome().result == 13)
    }

    @Test func aHitCountBreakpointStopsFromItsNthHit() async throws {
        let h = try DebugHarness()
        try h.launch("main", [4])
        _ = h.session.setBreakpoints(path: h.path("main.js"), [.init(line: 4, hitCondition: ">= 3")])
        h.session.start()
        for expected in ["2", "3"] {
            let stop = try await h.nextStop()
            #expect(try await h.session.request("evaluate", ["expression": "i", "frameId": stop["id"]])["value"] == .string(expected))
            try await h.session.request("continue")
        }
        #expect(try await h.outcome().result == 13)
    }

    @Test func aLogpointPrintsWithoutStopping() async throws {
        let h = try DebugHarness()
        try h.launch("main", [4])
        _ = h.session.setBreakpoints(path: h.path("main.js"), [.init(line: 7, logMessage: "more is {more}, twice {more * 2}")])
        h.session.start()
        #expect(try await h.outcome().result == 13)
        #expect(h.output.map(\.text) == ["more is 13, twice 26\n"])
        #expect(h.output.map(\.line) == [7])
        #expect(h.output.map(\.category) == ["console"])
    }

    @Test func breakpointsBindToTheNextStatement() throws {
        let h = try DebugHarness()
        try h.launch("main", [1])
        let set = h.session.setBreakpoints(path: h.path("main.js"), [.init(line: 5), .init(line: 1), .init(line: 40), .init(line: 7, column: 6)])
        #expect(set.map(\.verified) == [true, true, false, true])
        #expect(set.map(\.line) == [6, 2, 40, 8])
        #expect(set.map(\.column) == [5, 5, nil, 5])
        #expect(h.session.setBreakpoints(path: h.path("nothere.js"), [.init(line: 1)]).first?.message == "not a file of this session")
        h.session.terminate()
    }

    @Test func uncaughtExceptionsStopWhereThrown() async throws {
        let h = try DebugHarness()
        try h.launch("thrower")
        h.session.setExceptionBreakpoints(all: false, uncaught: true)
        h.session.start()
        // The caught one does not stop; the uncaught one does, in the lib helper, with its caller below.
        let stop = try await h.nextStop()
        #expect(h.position(stop) == "lib/helpers.js:10:5 exception")
        #expect(stop["text"] == "RangeError: boom caught")
        let frames = try await h.session.request("stackTrace")["frames"].arrayValue ?? []
        #expect(frames.map { h.position($0) } == ["lib/helpers.js:10:5", "thrower.js:4:5"])
        try await h.session.request("continue")
        let outcome = try await h.outcome()
        #expect(outcome.error?.message == "boom caught")
        #expect(outcome.error?.line == 10)
    }

    @Test func allExceptionsStopOnCaughtOnesToo() async throws {
        let h = try DebugHarness()
        try h.launch("thrower")
        h.session.setExceptionBreakpoints(all: true, uncaught: true)
        h.session.start()
        let first = try await h.nextStop()
        #expect(h.position(first) == "lib/helpers.js:10:5 exception")
        #expect(first["text"] == "RangeError: caught")
        let frames = try await h.session.request("stackTrace")["frames"].arrayValue ?? []
        #expect(frames.map { h.position($0) } == ["lib/helpers.js:10:5", "thrower.js:3:11"])
        try await h.session.request("continue")
        let second = try await h.nextStop()
        #expect(second["text"] == "RangeError: boom caught")
        try await h.session.request("continue")
        #expect(try await h.outcome().error?.message == "boom caught")
    }

    @Test func pauseInterruptsARunningLoopAndTerminateEndsIt() async throws {
        let h = try DebugHarness()
        try h.launch("spin") {
            $0.timeLimit = .seconds(600); $0.callDeadline = .seconds(600)
        }
        h.session.start()
        #expect(try await h.nextOutput().text == "spinning\n")
        h.session.pause()
        let stop = try await h.nextStop()
        #expect(["spin.js:5:9 pause", "spin.js:4:5 pause"].contains(h.position(stop)))
        h.session.terminate()
        let outcome = try await h.outcome()
        #expect(outcome.error?.code == .cancelled)
    }

    @Test func terminateStopsARunningLoop() async throws {
        let h = try DebugHarness()
        try h.launch("spin") {
            $0.timeLimit = .seconds(600); $0.callDeadline = .seconds(600)
        }
        h.session.start()
        #expect(try await h.nextOutput().text == "spinning\n")
        h.session.terminate()
        #expect(try await h.outcome().error?.code == .cancelled)
    }

    @Test func anEndlessAwaitLoopEndsAtTheCallDeadline() async throws {
        let h = try DebugHarness()
        try h.launch("pump") { $0.callDeadline = .milliseconds(200) }
        h.session.start()
        let outcome = try await h.outcome()
        #expect(outcome.error?.code == .timeout)
        #expect(outcome.error?.message == "timed out after 200 ms of running (call_deadline_ms)")
    }

    @Test func terminateEndsAnEndlessAwaitLoop() async throws {
        let h = try DebugHarness()
        try h.launch("pump") {
            $0.timeLimit = .seconds(600); $0.callDeadline = .seconds(600)
        }
        _ = h.session.setBreakpoints(path: h.path("pump.js"), [.init(line: 5, hitCondition: "1000")])
        h.session.start()
        _ = try await h.nextStop()
        _ = h.session.setBreakpoints(path: h.path("pump.js"), [])
        try await h.session.request("continue")
        h.session.terminate()
        #expect(try await h.outcome().error?.code == .cancelled)
    }

    @Test func aRunawayInASessionIsStillStopped() async throws {
        let h = try DebugHarness()
        try h.launch("spin") { $0.timeLimit = .milliseconds(200) }
        h.session.start()
        let outcome = try await h.outcome()
        #expect(outcome.error?.code == .timeout)
    }

    @Test func timeStoppedDoesNotCountAgainstTheTimeLimit() async throws {
        let h = try DebugHarness()
        try h.launch("busy", [100], stopOnEntry: true) {
            $0.timeLimit = .milliseconds(400); $0.callDeadline = .milliseconds(500)
        }
        h.session.start()
        #expect(h.position(try await h.nextStop()) == "busy.js:2:5 entry")
        // Stopped for longer than both limits (time passing, not a synchronisation), then 100 ms
        // of running: within the time limit only if the stop is not counted.
        try await letTimePass(.milliseconds(700))
        try await h.session.request("continue")
        #expect(try await h.outcome().result == "done")
    }

    @Test func theTimeLimitStillCountsRunningTime() async throws {
        // After a stop, a loop that never ends is still ended by the time limit (JavaScriptCore's
        // watchdog ticks on the thread's CPU time: on a starved machine it takes longer, never forever).
        let h = try DebugHarness()
        try h.launch("spin", stopOnEntry: true) {
            $0.timeLimit = .milliseconds(200); $0.callDeadline = .seconds(600)
        }
        h.session.start()
        #expect(h.position(try await h.nextStop()) == "spin.js:2:5 entry")
        try await h.session.request("continue")
        let outcome = try await h.outcome()
        #expect(outcome.error?.code == .timeout, "\(outcome.json.jsonText())")
    }

    @Test func anAbandonedStoppedSessionEndsAfterItsIdleTime() async throws {
        let h = try DebugHarness()
        try h.launch("main", [3], stopOnEntry: true) { $0.idleTimeout = .milliseconds(200) }
        h.session.start()
        _ = try await h.nextStop()
        let outcome = try await h.outcome()
        #expect(outcome.error?.code == .cancelled)
        await #expect(throws: DebugError(.ended, "the debug session has ended")) { try await h.session.request("stackTrace") }
    }

    @Test func requestsThatNeedAStopAreRefusedWhileRunning() async throws {
        let h = try DebugHarness()
        try h.launch("main", [3])
        await #expect(throws: DebugError.self) { try await h.session.request("stackTrace") }
        h.session.terminate()
        #expect(try await h.outcome().error?.code == .cancelled)
    }

    @Test func aBareFunctionMacroIsNamedAfterItsFile() async throws {
        let h = try DebugHarness()
        try h.launch("bare", [41], stopOnEntry: true)
        h.session.start()
        let stop = try await h.nextStop()
        #expect(h.position(stop) == "bare.js:3:5 entry")
        #expect(stop["name"] == "bare")
        try await h.session.request("continue")
        #expect(try await h.outcome().result == 42)
    }

    @Test func anAnonymousFunctionMacroOnItsFirstLineStopsAtItsExactColumn() async throws {
        let h = try DebugHarness()
        try h.launch("anonymous", [6, 7], stopOnEntry: true)
        h.session.start()
        let stop = try await h.nextStop()
        #expect(h.position(stop) == "anonymous.js:1:19 entry")
        #expect(stop["name"] == "anonymous")
        try await h.session.request("continue")
        #expect(try await h.outcome().result == 42)
    }

    @Test func aMissingMacroFailsToLaunch() throws {
        let h = try DebugHarness()
        #expect(throws: DebugError.self) { try h.launch("nosuch") }
    }
}

/// A debug session runs on a copy of its macro's store.
@Suite("Debug sessions and the store")
struct DebugStoreTests {
    @Test func aSessionReadsACopyOfTheStoreAndWritesOnlyItsCopy() async throws {
        let h = try DebugHarness()
        try h.directory.write("tally.js", "function tally() {\n    const n = (store.get(\"count\") ?? 0) + 1;\n    store.set(\"count\", n);\n    return n;\n}\n")
        try h.launch("tally", stopOnEntry: true) { $0.store = ["count": "41"] }
        h.session.start()
        #expect(h.position(try await h.nextStop()) == "tally.js:2:5 entry")
        try await h.session.request("continue")
        #expect(try await h.outcome().result == 42)
    }

    @Test func theStoreCrossesToTheSessionProcess() throws {
        var options = DebugSession.Options(macro: "tally", directory: "/tmp")
        options.store = ["count": "41", "note": #"{"a":[1,"x"]}"#]
        #expect(DebugSession.Options(json: options.json)?.store == options.store)
    }
}
