import Foundation
import MacroBase
import MacroRPC
import MacroTestSupport
import Testing

/// The requests an editor sends beyond stepping: restart, exceptionInfo, completions,
/// loadedSources, function breakpoints; stepping out of a callback; a quiet disconnect.
extension DapTests {
    @Test func stepOutOfAForEachCallbackGoesBackToItsCaller() async throws {
        let s = try await Self.launch(
            "each", [[1, 2, 3]], breakpoints: ["each.js": [["line": 4, "condition": "x === 1"], ["line": 9, "condition": "x === 1"]]])
        #expect(try await s.dap.event("stopped")["reason"] == "breakpoint")
        let callback = try await s.dap.body("stackTrace", ["threadId": 1])["stackFrames"].arrayValue ?? []
        #expect(callback.map { s.position($0) } == ["each.js:4:9", "each.js:3:5"])
        // Out of the first call: forEach calls it twice more (the same caller, not a way out),
        // then the caller's next statement.
        try await s.dap.body("stepOut", ["threadId": 1])
        #expect(try await s.dap.event("stopped")["reason"] == "step")
        let back = try await s.dap.body("stackTrace", ["threadId": 1])["stackFrames"].arrayValue ?? []
        #expect(back.map { s.position($0) } == ["each.js:6:5"])
        #expect(try await s.dap.body("evaluate", ["expression": "sum", "frameId": back[0]["id"]])["result"] == "6")
        // An arrow called by forEach in `record`, whose forEach is its last statement: out of it
        // is past `record`, at the statement after `record(seen)`.
        try await s.dap.body("continue", ["threadId": 1])
        _ = try await s.dap.event("stopped")
        let arrow = try await s.dap.body("stackTrace", ["threadId": 1])["stackFrames"].arrayValue ?? []
        #expect(arrow.map { s.position($0) } == ["each.js:9:13", "each.js:8:9", "each.js:13:5"])
        #expect(arrow.map(\.["name"]) == ["(anonymous)", "record", "each"])
        try await s.dap.body("stepOut", ["threadId": 1])
        _ = try await s.dap.event("stopped")
        let after = try await s.dap.body("stackTrace", ["threadId": 1])["stackFrames"].arrayValue ?? []
        #expect(after.map { s.position($0) } == ["each.js:14:5"])
        #expect(try await s.dap.body("evaluate", ["expression": "seen.length", "frameId": after[0]["id"]])["result"] == "3")
        try await s.dap.body("continue", ["threadId": 1])
        #expect(try await s.dap.event("output")["output"] == "result: 15\n")
        #expect(try await s.dap.event("exited")["exitCode"] == 0)
        try await s.dap.body("disconnect")
        #expect(s.dap.exitStatus() == 0)
    }

    @Test func functionBreakpointsStopOnEntryAndSayWhichNamesAreMissing() async throws {
        let s = try await Self.launch("main", [3], functions: [["name": "double"], ["name": "nosuch"], ["name": "later", "condition": "v > 100"]])
        let set = s.functionBreakpoints["breakpoints"].arrayValue ?? []
        #expect(set.count == 3)
        #expect(set.map(\.["verified"]) == [true, false, true])
        #expect(set[0]["source"]["path"] == .string(s.path("lib/helpers.js")))
        #expect(set[0]["line"] == 2)
        #expect(set[0]["column"] == 5)
        #expect(set[1]["message"] == "no function named 'nosuch' in this session's files")
        #expect(set[1]["line"] == .undefined)
        #expect(set[2]["line"] == 6)
        #expect(Set(set.compactMap(\.["id"].intValue)).count == 3)
        // double(0): at its first statement, before `var y = x * 2` ran.
        let hit = try await s.dap.event("stopped")
        #expect(hit["reason"] == "function breakpoint")
        #expect(hit["hitBreakpointIds"] == .array([set[0]["id"]]))
        let frames = try await s.dap.body("stackTrace", ["threadId": 1])["stackFrames"].arrayValue ?? []
        #expect(frames.map { s.position($0) } == ["lib/helpers.js:2:5", "main.js:4:9"])
        #expect(try await s.locals(frames[0]) == ["x": "0", "y": "undefined"])
        // Not an exception stop: exceptionInfo says so.
        let info = try await s.dap.request("exceptionInfo", ["threadId": 1])
        #expect(info["success"] == false, "\(info.jsonText())")
        #expect(info["message"] == "exceptionInfo: the macro is not stopped at an exception")
        // Replaced by one with a condition: the next stop is double(2).
        let replaced = try await s.dap.body("setFunctionBreakpoints", ["breakpoints": [["name": "double", "condition": "x === 2"]]])
        #expect(replaced["breakpoints"][0]["verified"] == true)
        try await s.dap.body("continue", ["threadId": 1])
        _ = try await s.dap.event("stopped")
        #expect(try await s.dap.body("evaluate", ["expression": "x", "frameId": try await s.topFrame()["id"]])["result"] == "2")
        try await s.dap.body("setFunctionBreakpoints", ["breakpoints": []])
        try await s.dap.body("continue", ["threadId": 1])
        #expect(try await s.dap.event("output")["output"] == "result: 7\ninner 0 -> 7 (not applied: a debug session works on a copy)\n")
        try await s.dap.body("disconnect")
    }

    @Test func exceptionInfoNamesTheErrorItsMessageHowItStoppedAndTheStack() async throws {
        let s = try await Self.launch("thrower", exceptions: ["all"])
        let caught = try await s.dap.event("stopped")
        #expect(caught["reason"] == "exception")
        let helpers = s.path("lib/helpers.js"), thrower = s.path("thrower.js")
        #expect(
            try await s.dap.body("exceptionInfo", ["threadId": 1]) == [
                "exceptionId": "RangeError", "description": "caught", "breakMode": "always",
                "details": [
                    "message": "caught", "typeName": "RangeError",
                    "stackTrace": .string("    at fail (\(helpers):10:5)\n    at thrower (\(thrower):3:11)"),
                ],
            ])
        try await s.dap.body("setExceptionBreakpoints", ["filters": ["uncaught"]])
        try await s.dap.body("continue", ["threadId": 1])
        _ = try await s.dap.event("stopped")
        let uncaught = try await s.dap.body("exceptionInfo", ["threadId": 1])
        #expect(uncaught["exceptionId"] == "RangeError")
        #expect(uncaught["description"] == "boom caught")
        #expect(uncaught["breakMode"] == "unhandled")
        #expect(uncaught["details"]["stackTrace"] == .string("    at fail (\(helpers):10:5)\n    at thrower (\(thrower):4:5)"))
        try await s.dap.body("continue", ["threadId": 1])
        #expect(try await s.dap.event("exited")["exitCode"] == 1)
        let after = try await s.dap.request("exceptionInfo", ["threadId": 1])
        #expect(after["success"] == false)
        try await s.dap.body("disconnect")
    }

    @Test func completionsOfNamesInScopeAndOfPropertiesAfterADot() async throws {
        let s = try await Self.launch("main", [3], breakpoints: ["lib/helpers.js": [["line": 3]]])
        _ = try await s.dap.event("stopped")
        let frames = try await s.dap.body("stackTrace", ["threadId": 1])["stackFrames"].arrayValue ?? []
        let helper = frames[0]["id"], caller = frames[1]["id"]
        func complete(_ text: String, column: Int? = nil, frame: MacroValue) async throws -> [String] {
            let arguments: MacroValue = ["text": .string(text), "column": .number(Double(column ?? text.utf16.count + 1)), "frameId": frame]
            let targets = try await s.dap.body("completions", arguments)["targets"].arrayValue ?? []
            return targets.map { "\($0["label"].stringValue ?? "?"):\($0["type"].stringValue ?? "?")@\($0["start"].intValue ?? 0)+\($0["length"].intValue ?? 0)" }
        }
        // A frame's own names, then the caller's (the loop's `i` is in its block).
        #expect(try await complete("x + y", frame: helper) == ["y:variable@5+1"])
        #expect(try await complete("to", frame: caller) == ["total:variable@1+2"])
        #expect(try await complete("i", frame: caller) == ["i:variable@1+1", "isFinite:function@1+1", "isNaN:function@1+1"])
        #expect(try await complete("do", frame: caller) == ["double:function@1+2"])
        // Globals, and properties (own and inherited) after a dot, where the cursor is.
        #expect(try await complete("Ma", frame: helper) == ["Map:function@1+2", "Math:variable@1+2"])
        #expect(try await complete("Math.ma + 1", column: 8, frame: helper) == ["max:method@6+2"])
        #expect(try await complete("y.toFi", frame: helper) == ["toFixed:method@3+4"])
        #expect(try await complete("[1].le", frame: helper) == [])
        #expect(try await complete("Math.P", frame: helper) == ["PI:property@6+1"])
        // Nothing to complete: a name not defined (yet), a call (never evaluated for a completion).
        #expect(try await complete("nosuch.x", frame: helper) == [])
        #expect(try await complete("Math.max().to", frame: helper) == [])
        try await s.dap.body("disconnect")
    }

    @Test func loadedSourcesAreTheFilesTheSessionLoaded() async throws {
        let s = try await Self.launch("main", [3], stopOnEntry: true)
        _ = try await s.dap.event("stopped")
        let sources = try await s.dap.body("loadedSources")["sources"].arrayValue ?? []
        #expect(
            sources.map { "\($0["name"].stringValue ?? "?") \(($0["path"].stringValue ?? "?").replacingOccurrences(of: s.daemon.macros + "/", with: ""))" } == [
                "helpers.js lib/helpers.js", "bump.js bump.js", "busy.js busy.js", "each.js each.js", "main.js main.js", "spin.js spin.js",
                "thrower.js thrower.js",
            ])
        try await s.dap.body("disconnect")
    }

    @Test func restartRunsAgainWithTheSameArgumentsAndBreakpoints() async throws {
        let s = try await Self.launch("main", [3], breakpoints: ["lib/helpers.js": [["line": 3]]])
        let first = try await s.dap.event("stopped")
        let id = try #require(first["hitBreakpointIds"][0].intValue)
        try await s.dap.body("continue", ["threadId": 1])
        _ = try await s.dap.event("stopped")
        #expect(try await s.dap.body("evaluate", ["expression": "x", "frameId": try await s.topFrame()["id"]])["result"] == "1")
        try await s.dap.body("restart", [:])
        // The breakpoint is bound in the new session under the id the client knows.
        let rebound = try await s.dap.event("breakpoint")
        #expect(rebound["reason"] == "changed")
        #expect(rebound["breakpoint"]["id"] == .number(Double(id)))
        #expect(rebound["breakpoint"]["verified"] == true)
        #expect(rebound["breakpoint"]["line"] == 3)
        let again = try await s.dap.event("stopped")
        #expect(again["hitBreakpointIds"] == [.number(Double(id))])
        #expect(s.position(try await s.topFrame()) == "lib/helpers.js:3:5")
        #expect(try await s.dap.body("evaluate", ["expression": "x", "frameId": try await s.topFrame()["id"]])["result"] == "0")
        // The first session has ended; the new one is the only one.
        let client = try RPCClient(path: s.daemon.socket)
        #expect(try client.call("debug.list") == [["session": 2, "macro": "main", "stopped": true]])
        // A restart with other launch arguments (as an editor sends them when the configuration changed).
        try await s.dap.body("setBreakpoints", ["source": ["path": .string(s.path("lib/helpers.js"))], "breakpoints": []])
        try await s.dap.body("restart", ["arguments": ["macro": "main", "args": [1]]])
        #expect(try await s.dap.event("output")["output"] == "result: 1\ninner 0 -> 1 (not applied: a debug session works on a copy)\n")
        #expect(try await s.dap.event("exited")["exitCode"] == 0)
        _ = try await s.dap.event("terminated")
        // Neither restart ended the client's session: one `exited`, one `terminated`, at the end.
        let names = s.dap.allEvents.compactMap { $0["event"].stringValue }
        #expect(names.filter { $0 == "terminated" || $0 == "exited" } == ["exited", "terminated"])
        #expect(names.filter { $0 == "initialized" } == ["initialized"])
        try await s.dap.body("disconnect")
        #expect(s.dap.exitStatus() == 0)
    }

    @Test func aDisconnectWhileStoppedEndsQuietly() async throws {
        let s = try await Self.launch("main", [3], stopOnEntry: true)
        _ = try await s.dap.event("stopped")
        try await s.dap.body("disconnect", ["restart": false, "terminateDebuggee": true])
        #expect(s.dap.exitStatus() == 0)
        // No error, no exit code: the session's end is the client's own doing.
        #expect(s.dap.allEvents.compactMap { $0["event"].stringValue } == ["initialized", "stopped", "terminated"])
        let client = try RPCClient(path: s.daemon.socket)
        #expect(try client.call("debug.list") == [])
    }

    @Test func requestsTheAdapterDoesNotHandleAreRefusedByName() async throws {
        let daemon = try DaemonProcess(files: Self.files)
        let dap = try DapClient(socket: daemon.socket)
        try await dap.body("initialize", ["adapterID": "macro"])
        let unknown = try await dap.request("disassemble", ["memoryReference": "0", "instructionCount": 1])
        #expect(unknown["success"] == false)
        #expect(unknown["message"] == "macro dap does not handle the request 'disassemble'")
        let nameless = try await dap.request("", [:])
        #expect(nameless["success"] == false)
        #expect(nameless["message"] == "a request without a command")
        for (command, message) in [
            ("restart", "restart: nothing was launched yet"), ("loadedSources", "no debug session: launch one first"),
            ("completions", "no debug session: launch one first"), ("setFunctionBreakpoints", "no debug session: launch one first"),
            ("exceptionInfo", "exceptionInfo: the macro is not stopped at an exception"),
        ] {
            let answer = try await dap.request(command, ["text": "x", "column": 2, "breakpoints": [], "threadId": 1])
            #expect(answer["success"] == false, "\(command)")
            #expect(answer["message"] == .string(message), "\(command)")
        }
        try await dap.body("disconnect")
        #expect(dap.exitStatus() == 0)
    }
}
