import Foundation
import MacroBase
import MacroRPC
import MacroTestSupport
import Testing

/// `macro dap` driven as an editor drives it, against a real macrod.
@Suite("macro dap: the Debug Adapter Protocol against a real macrod")
struct DapTests {
    static let files: [String: String] = [
        "lib/helpers.js": """
            function double(x) {
                var y = x * 2;
                return y;
            }
            async function later(v) {
                await sleep(1);
                return v + 1;
            }
            function fail(why) {
                throw new RangeError(why);
            }
            """,
        "main.js": """
            async function main(n) {
                let total = 0;
                for (let i = 0; i < n; i++) {
                    total += double(i);
                }
                let more = await later(total);
                progress.inner = more;
                return more;
            }
            """,
        "thrower.js": """
            function thrower() {
                let note = "";
                try { fail("caught"); } catch (e) { note = e.message; }
                fail("boom " + note);
            }
            """,
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
    ]

    /// A daemon with the files, and a `macro dap` launched on `macro` with breakpoints set.
    struct Setup {
        let daemon: DaemonProcess
        let dap: DapClient
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

    static func launch(_ macro: String, _ args: MacroValue = [], stopOnEntry: Bool = false, breakpoints: [String: [MacroValue]] = [:],
                       exceptions: [String] = ["uncaught"], extra: MacroValue = [:]) async throws -> Setup {
        let daemon = try DaemonProcess(files: files)
        let dap = try DapClient(socket: daemon.socket)
        let setup = Setup(daemon: daemon, dap: dap)
        let capabilities = try await dap.body("initialize", ["adapterID": "macro", "linesStartAt1": true, "columnsStartAt1": true])
        #expect(capabilities["supportsConfigurationDoneRequest"] == true)
        var arguments: MacroValue = ["macro": .string(macro), "args": args, "stopOnEntry": .bool(stopOnEntry)]
        for (key, value) in extra.objectValue ?? [:] { if case .object(var fields) = arguments { fields[key] = value; arguments = .object(fields) } }
        try await dap.body("launch", arguments)
        _ = try await dap.event("initialized")
        for (file, list) in breakpoints {
            let set = try await dap.body("setBreakpoints", ["source": ["path": .string(setup.path(file))], "breakpoints": .array(list)])
            #expect(set["breakpoints"].arrayValue?.allSatisfy { $0["verified"] == true } == true)
        }
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
