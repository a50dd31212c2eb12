import Foundation
import MacroBase
import MacroRPC
import MacroTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `macro dap` driven as an editor drives it, against a real macrod.
@Suite("macro dap: the Debug Adapter Protocol against a real macrod")
struct DapTests {
    static let files: [String: String] = DebugFixtures.files.merging([
        "spin.js": """
        function spin() {
            let n = 0;
            console.log("spinning");
            while (true) {
                n++;
            }
        }
        """,
        "bump.js": """
        function bump(channel, amount) {
            progress[channel] += amount;
            return progress[channel];
        }
        """,
        // Callbacks a native (Array.prototype.forEach) calls: stepping out of one goes back to the
        // caller (line 6), or past a caller that has nothing after the forEach (line 14).
        "each.js": """
        function each(list) {
            let sum = 0;
            list.forEach(function (x) {
                sum += x;
            });
            const after = sum * 2;
            function record(seen) {
                list.forEach((x) => {
                    seen.push(x);
                });
            }
            const seen = [];
            record(seen);
            return after + seen.length;
        }
        """,
    ]) { _, own in own }

    /// A daemon with the files, and a `macro dap` launched on `macro` with breakpoints set.
    struct Setup {
        let daemon: DaemonProcess
        let dap: DapClient
        /// The answer to `setFunctionBreakpoints`, when the launch set some.
        var functionBreakpoints: MacroValue = .undefined
        func path(_ relative: String) -> String { daemon.macros + "/" + relative }
        /// `FILE:LINE:COLUMN` of a frame or breakpoint, FILE relative to the macros directory.
        func position(_ frame: MacroValue) -> String {
            let file = (frame["source"]["path"].stringValue ?? "?").replacingOccurrences(of: daemon.macros + "/", with: "")
            return "\(file):\(frame["line"].intValue ?? 0):\(frame["column"].intValue ?? 0)"
        }
        func topFrame() async throws -> MacroValue {
            try await dap.body("stackTrace", ["threadId": 1])["stackFrames"][0]
        }
        func locals(_ frame: MacroValue) async throws -> [String: String] {
            let scopes = try await dap.body("scopes", ["frameId": frame["id"]])["scopes"]
            #expect(scopes[0]["name"] == "Locals")
            return try await variables(scopes[0]["variablesReference"])
        }
        func variables(_ ref: MacroValue) async throws -> [String: String] {
            let list = try await dap.body("variables", ["variablesReference": ref])["variables"].arrayValue ?? []
            return Dictionary(uniqueKeysWithValues: list.map { ($0["name"].stringValue ?? "", $0["value"].stringValue ?? "") })
        }
    }

    static func launch(
        _ macro: String, _ args: MacroValue = [], stopOnEntry: Bool = false, breakpoints: [String: [MacroValue]] = [:],
        exceptions: [String] = ["uncaught"], functions: [MacroValue]? = nil, extra: MacroValue = [:], config: String? = nil
    ) async throws -> Setup {
        // A session counts its running time (not the time stopped) against the time limit, by the
        // wall clock: with the default 5 s, a loaded machine (the whole suite at once) ended a
        // session of a dozen steps in two CI runs. These tests are not about the limit.
        let daemon = try DaemonProcess(files: files, config: config ?? "time_limit_ms: 60000\ncall_deadline_ms: 120000\n")
        let dap = try DapClient(socket: daemon.socket)
        var setup = Setup(daemon: daemon, dap: dap)
        let capabilities = try await dap.body("initialize", ["adapterID": "macro", "linesStartAt1": true, "columnsStartAt1": true])
        #expect(capabilities["supportsConfigurationDoneRequest"] == true)
        for capability in [
            "supportsRestartRequest", "supportsExceptionInfoRequest", "supportsCompletionsRequest", "supportsLoadedSourcesRequest",
            "supportsFunctionBreakpoints",
        ] {
            #expect(capabilities[capability] == true, "\(capability)")
        }
        var arguments: MacroValue = ["macro": .string(macro), "args": args, "stopOnEntry": .bool(stopOnEntry)]
        for (key, value) in extra.objectValue ?? [:] { if case .object(var fields) = arguments { fields[key] = value; arguments = .object(fields) } }
        try await dap.body("launch", arguments)
        _ = try await dap.event("initialized")
        for (file, list) in breakpoints {
            let set = try await dap.body("setBreakpoints", ["source": ["path": .string(setup.path(file))], "breakpoints": .array(list)])
            #expect(set["breakpoints"].arrayValue?.allSatisfy { $0["verified"] == true } == true)
        }
        if let functions { setup.functionBreakpoints = try await dap.body("setFunctionBreakpoints", ["breakpoints": .array(functions)]) }
        try await dap.body("setExceptionBreakpoints", ["filters": .array(exceptions.map { .string($0) })])
        try await dap.body("configurationDone")
        return setup
    }

    @Test func everyRequestOfASessionFromEntryToExit() async throws {
        let s = try await Self.launch("main", [3], stopOnEntry: true)
        let entry = try await s.dap.event("stopped")
        #expect(entry["reason"] == "entry")
        #expect(entry["threadId"] == 1)
        #expect(try await s.dap.body("threads")["threads"] == [["id": 1, "name": "main"]])
        #expect(s.position(try await s.topFrame()) == "main.js:2:5")
        // A breakpoint set while stopped, in the lib helper, at its exact statement.
        let set = try await s.dap.body("setBreakpoints", ["source": ["path": .string(s.path("lib/helpers.js"))], "breakpoints": [["line": 3]]])
        #expect(set["breakpoints"][0]["line"] == 3)
        #expect(set["breakpoints"][0]["column"] == 5)
        try await s.dap.body("next", ["threadId": 1])
        #expect(try await s.dap.event("stopped")["reason"] == "step")
        #expect(s.position(try await s.topFrame()) == "main.js:3:5")
        try await s.dap.body("next", ["threadId": 1])
        _ = try await s.dap.event("stopped")
        #expect(s.position(try await s.topFrame()) == "main.js:4:9")
        try await s.dap.body("stepIn", ["threadId": 1])
        _ = try await s.dap.event("stopped")
        let stack = try await s.dap.body("stackTrace", ["threadId": 1])
        #expect((stack["stackFrames"].arrayValue ?? []).map { s.position($0) } == ["lib/helpers.js:2:5", "main.js:4:9"])
        #expect((stack["stackFrames"].arrayValue ?? []).map { $0["name"] } == ["double", "main"])
        #expect(stack["totalFrames"] == 2)
        let helper = stack["stackFrames"][0], caller = stack["stackFrames"][1]
        #expect(try await s.locals(helper) == ["x": "0", "y": "undefined"])
        #expect(try await s.locals(caller) == ["n": "3", "total": "0", "more": "<uninitialized>", "i": "0"])
        // evaluate in a frame, for hover, and in another frame.
        #expect(try await s.dap.body("evaluate", ["expression": "x + 40", "frameId": helper["id"], "context": "repl"])["result"] == "40")
        #expect(try await s.dap.body("evaluate", ["expression": "n", "frameId": caller["id"], "context": "hover"])["result"] == "3")
        let object = try await s.dap.body("evaluate", ["expression": "({ list: [1, 2], deep: { ok: true } })", "frameId": helper["id"]])
        #expect(object["result"] == "{list: […], deep: {…}}")
        let children = try await s.variables(object["variablesReference"])
        #expect(children == ["list": "Array(2)", "deep": "{ok: true}"])
        let failed = try await s.dap.request("evaluate", ["expression": "missing.x", "frameId": helper["id"]])
        #expect(failed["success"] == false)
        #expect(failed["message"] == "ReferenceError: Can't find variable: missing")
        // setVariable: x becomes 5 before `var y = x * 2` runs.
        let scopes = try await s.dap.body("scopes", ["frameId": helper["id"]])["scopes"]
        let setVar = try await s.dap.body("setVariable", ["variablesReference": scopes[0]["variablesReference"], "name": "x", "value": "5"])
        #expect(setVar["value"] == "5")
        try await s.dap.body("next", ["threadId": 1])
        let hit = try await s.dap.event("stopped")
        #expect(hit["reason"] == "breakpoint")
        #expect(s.position(try await s.topFrame()) == "lib/helpers.js:3:5")
        #expect(try await s.locals(try await s.topFrame()) == ["x": "5", "y": "10"])
        try await s.dap.body("stepOut", ["threadId": 1])
        _ = try await s.dap.event("stopped")
        #expect(s.position(try await s.topFrame()) == "main.js:4:9")
        #expect(try await s.dap.body("evaluate", ["expression": "total", "frameId": try await s.topFrame()["id"]])["result"] == "10")
        try await s.dap.body("setBreakpoints", ["source": ["path": .string(s.path("lib/helpers.js"))], "breakpoints": []])
        try await s.dap.body("continue", ["threadId": 1])
        // 10 + double(1) + double(2) = 16, later: 17.
        let output = try await s.dap.event("output")
        #expect(output["output"] == "result: 17\ninner 0 -> 10 (not applied: a debug session works on a copy)\n")
        #expect(try await s.dap.event("exited")["exitCode"] == 0)
        _ = try await s.dap.event("terminated")
        try await s.dap.body("disconnect")
        #expect(s.dap.exitStatus() == 0)
        // The live values never moved.
        let client = try RPCClient(path: s.daemon.socket)
        #expect(try client.call("progress.get")["inner"] == 0)
    }
}

extension DapTests {
    @Test func steppingOverAnAwaitAndIntoAnAsyncLibHelper() async throws {
        let s = try await Self.launch("main", [3], breakpoints: ["main.js": [["line": 6]]])
        #expect(try await s.dap.event("stopped")["reason"] == "breakpoint")
        #expect(s.position(try await s.topFrame()) == "main.js:6:5")
        try await s.dap.body("stepIn", ["threadId": 1])
        _ = try await s.dap.event("stopped")
        #expect(s.position(try await s.topFrame()) == "lib/helpers.js:6:5")
        // Over `await sleep(1)`: the next stop is in `later` again, not wherever the loop went.
        try await s.dap.body("next", ["threadId": 1])
        _ = try await s.dap.event("stopped")
        let frames = try await s.dap.body("stackTrace", ["threadId": 1])["stackFrames"].arrayValue ?? []
        #expect(frames.map { s.position($0) } == ["lib/helpers.js:7:5", "main.js:6:5"])
        #expect(try await s.locals(frames[0]) == ["v": "6"])
        try await s.dap.body("next", ["threadId": 1])
        _ = try await s.dap.event("stopped")
        #expect(s.position(try await s.topFrame()) == "main.js:7:5")
        #expect(try await s.locals(try await s.topFrame())["more"] == "7")
        try await s.dap.body("continue", ["threadId": 1])
        #expect(try await s.dap.event("exited")["exitCode"] == 0)
        try await s.dap.body("disconnect")
    }

    @Test func uncaughtAndCaughtExceptionStops() async throws {
        let s = try await Self.launch("thrower", exceptions: ["all"])
        let caught = try await s.dap.event("stopped")
        #expect(caught["reason"] == "exception")
        #expect(caught["text"] == "RangeError: caught")
        let frames = try await s.dap.body("stackTrace", ["threadId": 1])["stackFrames"].arrayValue ?? []
        #expect(frames.map { s.position($0) } == ["lib/helpers.js:10:5", "thrower.js:3:11"])
        #expect(try await s.locals(frames[0]) == ["why": "\"caught\""])
        // Only uncaught ones from now on.
        try await s.dap.body("setExceptionBreakpoints", ["filters": ["uncaught"]])
        try await s.dap.body("continue", ["threadId": 1])
        let uncaught = try await s.dap.event("stopped")
        #expect(uncaught["reason"] == "exception")
        #expect(uncaught["description"] == "RangeError: boom caught")
        #expect(s.position(try await s.topFrame()) == "lib/helpers.js:10:5")
        try await s.dap.body("continue", ["threadId": 1])
        let output = try await s.dap.event("output")
        #expect(output["output"] == "error: boom caught\n")
        #expect(try await s.dap.event("exited")["exitCode"] == 1)
        _ = try await s.dap.event("terminated")
        try await s.dap.body("disconnect")
    }

    @Test func conditionalHitCountBreakpointsAndLogpoints() async throws {
        let s = try await Self.launch(
            "main", [5],
            breakpoints: [
                "main.js": [["line": 4, "condition": "i === 3"], ["line": 7, "logMessage": "more={more} twice={more * 2}"]],
                "lib/helpers.js": [["line": 3, "hitCondition": ">= 2", "condition": "x > 0"]],
            ])
        // helpers.js:3 with x > 0: the 1st such hit is i = 1 (skipped), the 2nd is i = 2.
        #expect(try await s.dap.event("stopped")["reason"] == "breakpoint")
        #expect(s.position(try await s.topFrame()) == "lib/helpers.js:3:5")
        #expect(try await s.dap.body("evaluate", ["expression": "x", "frameId": try await s.topFrame()["id"]])["result"] == "2")
        try await s.dap.body("continue", ["threadId": 1])
        let conditional = try await s.dap.event("stopped")
        #expect(s.position(try await s.topFrame()) == "main.js:4:9")
        #expect(try await s.dap.body("evaluate", ["expression": "i", "frameId": try await s.topFrame()["id"]])["result"] == "3")
        #expect(conditional["hitBreakpointIds"].arrayValue?.count == 1)
        try await s.dap.body("setBreakpoints", ["source": ["path": .string(s.path("lib/helpers.js"))], "breakpoints": []])
        try await s.dap.body("continue", ["threadId": 1])
        let log = try await s.dap.event("output")
        #expect(log["category"] == "console")
        #expect(log["output"] == "more=21 twice=42\n")
        #expect(log["line"] == 7)
        #expect(log["source"]["path"] == .string(s.path("main.js")))
        #expect(try await s.dap.event("exited")["exitCode"] == 0)
        try await s.dap.body("disconnect")
    }

    @Test func pauseStopsARunningLoopAndTerminateEndsIt() async throws {
        let s = try await Self.launch("spin", config: "time_limit_ms: 600000\ncall_deadline_ms: 600000\n")
        #expect(try await s.dap.event("output")["output"] == "spinning\n")
        try await s.dap.body("pause", ["threadId": 1])
        #expect(try await s.dap.event("stopped")["reason"] == "pause")
        #expect(["spin.js:5:9", "spin.js:4:5"].contains(s.position(try await s.topFrame())))
        let n = Int(try await s.dap.body("evaluate", ["expression": "n", "frameId": try await s.topFrame()["id"]])["result"].stringValue ?? "") ?? -1
        #expect(n >= 0)
        try await s.dap.body("terminate")
        // Asked for: said as such, not as an error.
        #expect(try await s.dap.event("output")["output"] == "terminated: the macro did not finish\n")
        #expect(try await s.dap.event("exited")["exitCode"] == 1)
        _ = try await s.dap.event("terminated")
        try await s.dap.body("disconnect")
        #expect(s.dap.exitStatus() == 0)
    }

    @Test func aStoppedSessionDoesNotDelayAnotherClientsCall() async throws {
        let s = try await Self.launch("main", [3], stopOnEntry: true)
        _ = try await s.dap.event("stopped")
        let client = try RPCClient(path: s.daemon.socket)
        client.setReceiveTimeout(seconds: 5)
        let clock = ContinuousClock()
        var times: [Duration] = []
        for _ in 0..<20 {
            let started = clock.now
            _ = try client.call("macro.call", ["name": "bump", "args": ["outer", 0.5]])
            times.append(clock.now - started)
        }
        let slowest = times.max()!
        print("macro.call while a session is stopped: median \(times.sorted()[10]), slowest \(slowest)")
        #expect(try client.call("progress.get")["outer"] == 10)
        // The session is still stopped where it was.
        #expect(s.position(try await s.topFrame()) == "main.js:2:5")
        // Blocked, a call would never be answered (the client gives up after 5 s); the bound only
        // leaves room for a loaded machine.
        #expect(slowest < .seconds(2), "slowest call while a session was stopped: \(slowest)")
        try await s.dap.body("disconnect")
        #expect(s.dap.exitStatus() == 0)
    }

    @Test func timeStoppedCountsAgainstNoLimitAndTheStallWatchLeavesMacrodAlone() async throws {
        let s = try await Self.launch(
            "busy", [100], stopOnEntry: true,
            config: "time_limit_ms: 400\ncall_deadline_ms: 500\nstall_grace_ms: 100\n")
        _ = try await s.dap.event("stopped")
        let client = try RPCClient(path: s.daemon.socket)
        let before = try client.call("engine.status")
        // Stopped for longer than the time limit, the call deadline and the stall grace together
        // (time passing, not a synchronisation).
        try await letTimePass(.milliseconds(900))
        try await s.dap.body("next", ["threadId": 1])
        _ = try await s.dap.event("stopped")
        #expect(s.position(try await s.topFrame()) == "busy.js:3:5")
        // 100 ms of running: within the 400 ms limit only if the 900 ms stopped are not counted.
        try await s.dap.body("continue", ["threadId": 1])
        #expect(try await s.dap.event("output")["output"] == "result: \"done\"\n")
        #expect(try await s.dap.event("exited")["exitCode"] == 0)
        let after = try client.call("engine.status")
        #expect(after["pid"] == before["pid"])
        #expect(after["javascript"] == "running")
        #expect(try client.call("macro.call", ["name": "bump", "args": ["inner", 1]]) == 1)
        try await s.dap.body("disconnect")
    }

    @Test func twoSessionsAtOnceEachStopAndEndOnTheirOwn() async throws {
        let s = try await Self.launch("main", [3], stopOnEntry: true)
        _ = try await s.dap.event("stopped")
        let other = try DapClient(socket: s.daemon.socket)
        try await other.body("initialize", ["adapterID": "macro"])
        try await other.body("launch", ["macro": "main", "args": [1], "stopOnEntry": true])
        _ = try await other.event("initialized")
        try await other.body("configurationDone")
        _ = try await other.event("stopped")
        // The second one runs to its end while the first stays stopped.
        try await other.body("continue", ["threadId": 1])
        #expect(try await other.event("output")["output"] == "result: 1\ninner 0 -> 1 (not applied: a debug session works on a copy)\n")
        #expect(s.position(try await s.topFrame()) == "main.js:2:5")
        try await s.dap.body("continue", ["threadId": 1])
        #expect(try await s.dap.event("output")["output"] == "result: 7\ninner 0 -> 7 (not applied: a debug session works on a copy)\n")
        try await other.body("disconnect")
        try await s.dap.body("disconnect")
    }

    @Test func anAdapterThatGoesAwayEndsItsSession() async throws {
        let s = try await Self.launch("main", [3], stopOnEntry: true)
        _ = try await s.dap.event("stopped")
        let watcher = try RPCClient(path: s.daemon.socket)
        #expect(try watcher.call("debug.list") == [["session": 1, "macro": "main", "stopped": true]])
        _ = try watcher.call("subscribe", ["events": ["log"]])
        s.dap.kill()
        // The adapter's connection closed: macrod ends the session, and logs so once it is gone.
        try watcher.waitForLog("debug session 1 ends: its connection closed")
        let client = try RPCClient(path: s.daemon.socket)
        #expect(try client.call("debug.list") == [])
        let error = try #require(throws: RPCError.self) { try client.call("debug.run", ["session": 1]) }
        #expect(error.code == -32020)
        #expect(error.data?["kind"] == "noSuchSession")
    }

    @Test func whenMacrodGoesAwayTheAdapterEndsTheSessionAndSaysWhy() async throws {
        let s = try await Self.launch("main", [3], stopOnEntry: true)
        _ = try await s.dap.event("stopped")
        _ = s.daemon.stop(signal: SIGKILL)
        #expect(try await s.dap.event("output")["output"] == "error: macrod closed the connection\n")
        #expect(try await s.dap.event("exited")["exitCode"] == 1)
        _ = try await s.dap.event("terminated")
        let late = try await s.dap.request("stackTrace", ["threadId": 1])
        #expect(late["success"] == false)
        try await s.dap.body("disconnect")
        #expect(s.dap.exitStatus() == 0)
    }

    @Test func launchErrorsAreAnswered() async throws {
        let daemon = try DaemonProcess(files: Self.files)
        let dap = try DapClient(socket: daemon.socket)
        try await dap.body("initialize", ["adapterID": "macro"])
        let missing = try await dap.request("launch", ["macro": "nosuch"])
        #expect(missing["success"] == false)
        #expect((missing["message"].stringValue ?? "").hasPrefix("no macro named 'nosuch'"))
        let noSession = try await dap.request("stackTrace", ["threadId": 1])
        #expect(noSession["message"] == "no debug session: launch one first")
        try await dap.body("disconnect")
        #expect(dap.exitStatus() == 0)
    }
}
