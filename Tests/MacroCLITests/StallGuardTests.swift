import Foundation
import MacroEngineCore
import MacroTestSupport
import Testing

/// `macro` without a daemon is not hung by JavaScript its watchdog cannot stop.
@Suite("macro CLI stall guard")
struct StallGuardTests {
    final class Fixture: Sendable {
        let dir = TemporaryDirectory()
        init() throws {
            // A macro file whose expression would run code at load is refused unrun; a lib file is a
            // script, and this one's load never ends.
            try dir.write("macros/chain.js", "// loads forever\n(function () { function f() { Promise.resolve().then(f) } f() })(), function () { return 1 }\n")
            try dir.write("macros/lib/chain.js", "// loads forever\n(function () { function f() { Promise.resolve().then(f) } f() })()\n")
            try dir.write("macros/loop.js", "async function() { progress.inner = 4; for (;;) await null; }")
            try dir.write("macros/ok.js", "function() { progress.outer += 1; return progress.outer }")
            try dir.write("config.yaml", "time_limit_ms: 300\nstall_grace_ms: 300\n")
        }
        func run(_ arguments: String...) throws -> ProcessResult {
            // --state only where the command keeps progress values.
            let stateful = ["run", "set", "progress", "repl"].contains(arguments.first ?? "")
            return try BinaryRunner.macro(
                arguments: arguments + ["--macros", dir.url("macros"), "--config", dir.url("config.yaml")] + (stateful ? ["--state", dir.url("state.json")] : []))
        }
    }

    @Test func aFileThatStallsWhileLoadingIsReportedAndTheCommandGoesOn() throws {
        let f = try Fixture()
        let list = try f.run("list", "--local", "--json")
        #expect(list.status == 0, "\(list)")
        let entries = try #require(try MacroValue(jsonText: list.stdout).arrayValue)
        #expect(entries.map { $0["name"] } == ["chain", "loop", "ok", "lib/chain"])
        #expect(entries[0]["status"] == "error")
        #expect(
            entries[0]["error"]["message"]
                == "a macro file must hold one function expression, e.g. function() { ... }; this one is a sequence (comma) expression (nothing of it was run)")
        #expect(entries[0]["error"]["line"] == 2)
        #expect(entries[3]["quarantined"] == true)
        #expect(entries[3]["error"]["message"].stringValue?.hasPrefix("lib/chain is quarantined: while it loaded, its code kept the engine busy") == true, "\(entries[3])")
        let run = try f.run("run", "ok", "--local", "--json")
        #expect(run.status == 0, "\(run)")
        #expect(try MacroValue(jsonText: run.stdout)["result"] == 1)
    }

    @Test func aStalledCallExits75AndSavesNothing() throws {
        let f = try Fixture()
        #expect(try f.run("run", "ok", "--local").status == 0)
        let run = try f.run("run", "loop", "--local", "--json")
        #expect(run.status == 75, "\(run)")
        #expect(try MacroValue(jsonText: run.stdout)["error"]["code"] == 75)
        #expect(try MacroValue(jsonText: run.stdout)["error"]["kind"] == "timeout")
        let progress = try f.run("progress", "--local", "--json")
        #expect(try MacroValue(jsonText: progress.stdout)["inner"] == 0, "\(progress)")
        #expect(try MacroValue(jsonText: progress.stdout)["outer"] == 1, "\(progress)")
    }
}
