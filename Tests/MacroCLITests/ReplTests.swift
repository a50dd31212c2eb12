import Foundation
import MacroEngineCore
import MacroTestSupport
import Testing

/// `macro repl`: in-process from stdin, and in a real terminal (tmux) for Ctrl-C, history and a
/// daemon that goes away.
@Suite("macro repl", .serialized)
struct ReplTests {
    @Test func topLevelAwaitHelpAndProgressWithItsValues() throws {
        let dir = TemporaryDirectory()
        try dir.write("macros/bump.js", "function bump(c, n) { progress[c] += n; return progress[c] }\n")
        try StateStore(path: dir.url("state.json")).save(["inner": 1, "middle": 2, "outer": 3])
        let input = "await sleep(5)\nx = await Promise.resolve({a: [1, 'b']})\nawait bump('inner', 2)\nprogress\nundefined\n.help\n.exit\n"
        let result = try BinaryRunner.run("macro", ["repl", "--local", "--macros", dir.url("macros"), "--state", dir.url("state.json")], input: input)
        #expect(result.status == 0, "\(result)")
        let lines = result.stdout.split(separator: "\n").map(String.init)
        #expect(Array(lines.prefix(5)) == ["undefined", "{ a: [ 1, 'b' ] }", "3", "{ inner: 3, middle: 2, outer: 3 }", "undefined"])
        #expect(lines.dropFirst(5).first == ".help     this text")
    }

    @Test func ctrlCCancelsRunningCodeAndKeepsTheSessionAndHistory() throws {
        let dir = TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: dir.url("macros"), withIntermediateDirectories: true)
        let macro = BinaryRunner.binDirectory + "/macro"
        let pane = try EditTests.Pane(
            dir: dir,
            command: "env XDG_STATE_HOME='\(dir.url("xdg"))' \(macro) repl --local --macros '\(dir.url("macros"))' --state '\(dir.url("state.json"))'; echo EXIT=$?; sleep 600")
        _ = try pane.waitForScreen("the banner") { $0.contains("REPL (in-process") }
        try pane.keys("counter = 41", "Enter")
        // (The line is echoed before it runs: wait for its own output, then press Ctrl-C.)
        try pane.keys("console.log('running'); await sleep(20000)", "Enter")
        _ = try pane.waitForScreen("the call running") { $0.contains("\nrunning\n") }
        try pane.keys("C-c")
        _ = try pane.waitForScreen("the interruption") { $0.contains("interrupted (the call was cancelled)") }
        try pane.keys("counter + 1", "Enter")
        _ = try pane.waitForScreen("state kept") { $0.contains("\n42\n") }
        try pane.keys("C-d")
        _ = try pane.waitForScreen("the exit") { $0.contains("EXIT=0") }
        #expect(try dir.read("xdg/macroengine/repl_history") == "counter = 41\nconsole.log('running'); await sleep(20000)\ncounter + 1\n")
    }

    @Test func theDaemonReplShowsValuesLikeTheLocalOneAndExits69WhenTheDaemonGoesAway() throws {
        let daemon = try DaemonProcess(files: ["boom.js": "function boom() {\n  throw new Error('inside');\n}\n"], config: "engine_eval: true\n")
        let dir = TemporaryDirectory()
        let macro = BinaryRunner.binDirectory + "/macro"
        let pane = try EditTests.Pane(dir: dir, command: "env XDG_STATE_HOME='\(dir.url("xdg"))' \(macro) repl --socket '\(daemon.socket)'; echo EXIT=$?; sleep 600")
        _ = try pane.waitForScreen("the banner") { $0.contains("REPL (macrod at") }
        try pane.keys("undefined", "Enter")
        try pane.keys("({a: [1, 'b']})", "Enter")
        try pane.keys("Promise.resolve(5).then(function (v) { return v * 7 })", "Enter")
        try pane.keys("boom()", "Enter")
        let screen = try pane.waitForScreen("three answers") { $0.contains("inside") }
        let lines = screen.split(separator: "\n").map(String.init)
        #expect(lines.contains("undefined"))
        #expect(lines.contains("{ a: [ 1, 'b' ] }"))
        #expect(lines.contains("35"))
        #expect(lines.contains("\(daemon.macros)/boom.js:2:18: error: Error: inside"), "\(screen)")
        daemon.stop()
        try pane.keys("1 + 1", "Enter")
        let end = try pane.waitForScreen("the exit") { $0.contains("EXIT=") }
        #expect(end.contains("EXIT=69"), "\(end)")
        #expect(end.contains("went away"), "\(end)")
    }

    /// Against macrod, every -32003 was taken as "input incomplete" (a SyntaxError
    /// left the session on "..." for good), `await` did not work at the top level, console
    /// output was lost; in-process, `var x = await ...; x + 1` showed undefined. Both now run the
    /// same scripts (ReplProgram) and print exactly the same.
    static let sharedInput = """
        foo bar
        1 + 1
        console.log("hey"); 5
        var x = await Promise.resolve(7); x + 1
        x
        await sleep(10)
        console.warn('careful'); await bump('inner', 2)
        function twice(n) {
          return n * 2
        }
        twice(21)
        let y = 3
        y * 2
        [1,
        .break
        [1, 2,
        3]
        null.x
        boom()
        }
        progress
        'text'
        .exit

        """

    static let sharedOutput = [
        "<repl>:1: error: SyntaxError: Unexpected identifier 'bar'",
        "2",
        "hey",
        "5",
        "8",
        "7",
        "undefined",
        "warning: careful",
        "3",
        "undefined",
        "42",
        "undefined",
        "6",
        "[ 1, 2, 3 ]",
        "<repl>:1:5: error: TypeError: null is not an object (evaluating 'null.x')",
        "MACROS/boom.js:2:18: error: Error: inside",
        "<repl>:1: error: SyntaxError: Unexpected token '}'",
        "{ inner: 3, middle: 2, outer: 3 }",
        "\"text\"",
    ]

    static let boom = "function boom() {\n  throw new Error('inside');\n}\n"
    static let bump = "function bump(c, n) { progress[c] += n; return progress[c] }\n"

    @Test func inProcessAndAgainstTheDaemonTheSameInputPrintsTheSame() throws {
        let dir = TemporaryDirectory()
        try dir.write("macros/boom.js", Self.boom)
        try dir.write("macros/bump.js", Self.bump)
        try StateStore(path: dir.url("state.json")).save(["inner": 1, "middle": 2, "outer": 3])
        let local = try BinaryRunner.run("macro", ["repl", "--local", "--macros", dir.url("macros"), "--state", dir.url("state.json")], input: Self.sharedInput)
        #expect(local.status == 0, "\(local)")
        #expect(local.stderr == "")
        #expect(local.stdout.split(separator: "\n").map(String.init) == Self.sharedOutput.map { $0.replacingOccurrences(of: "MACROS", with: dir.url("macros")) })

        let daemon = try DaemonProcess(files: ["boom.js": Self.boom, "bump.js": Self.bump], config: "engine_eval: true\n")
        _ = try daemon.client().call("progress.set", ["inner": 1, "middle": 2, "outer": 3])
        let remote = try BinaryRunner.run("macro", ["repl", "--socket", daemon.socket], input: Self.sharedInput)
        #expect(remote.status == 0, "\(remote)")
        #expect(remote.stderr == "")
        #expect(remote.stdout.split(separator: "\n").map(String.init) == Self.sharedOutput.map { $0.replacingOccurrences(of: "MACROS", with: daemon.macros) })
    }

    /// In a real terminal against macrod: a SyntaxError is shown and the prompt stays `> `;
    /// Ctrl-C and `.break` clear a continuation; Ctrl-C cancels a runaway loop and an await.
    @Test func theDaemonReplInATerminalReportsSyntaxErrorsAndCtrlCClearsAndCancels() throws {
        let daemon = try DaemonProcess(config: "engine_eval: true\n")
        let dir = TemporaryDirectory()
        let macro = BinaryRunner.binDirectory + "/macro"
        let pane = try EditTests.Pane(dir: dir, command: "env XDG_STATE_HOME='\(dir.url("xdg"))' \(macro) repl --socket '\(daemon.socket)'; echo EXIT=$?; sleep 600")
        _ = try pane.waitForScreen("the banner") { $0.contains("REPL (macrod at") }
        try pane.keys("foo bar", "Enter")
        _ = try pane.waitForScreen("the syntax error") { $0.contains("<repl>:1: error: SyntaxError: Unexpected identifier 'bar'\n>") }
        try pane.keys("if (true) {", "Enter")
        _ = try pane.waitForScreen("the continuation") { $0.contains("> if (true) {\n...") }
        // Each line is typed once its prompt is back: typed ahead, the terminal (not yet in the
        // line editor's raw mode) echoes it a second time (seen in a CI run under load).
        try pane.keys("C-c")
        _ = try pane.waitForScreen("the prompt after ^C") { $0.contains("... ^C\n>") }
        try pane.keys("[1,", "Enter")
        _ = try pane.waitForScreen("the continuation of [1,") { $0.contains("> [1,\n...") }
        try pane.keys(".break", "Enter")
        _ = try pane.waitForScreen("the prompt after .break") { $0.contains("... .break\n>") }
        try pane.keys("40 + 2", "Enter")
        _ = try pane.waitForScreen("the answer after ^C and .break") { $0.contains("> 40 + 2\n42\n") }
        try pane.keys("console.log('spinning'); while (true) {}", "Enter")
        _ = try pane.waitForScreen("the loop running") { $0.contains("\nspinning\n") }
        try pane.keys("C-c")
        _ = try pane.waitForScreen("the loop cancelled") { $0.contains("interrupted (the call was cancelled)") }
        try pane.keys("await sleep(20000)", "Enter")
        _ = try pane.waitForScreen("the await running") { $0.contains("> await sleep(20000)\n") }
        // (The call must be running before Ctrl-C: macro running lists it.)
        let client = try daemon.client()
        #expect(try !client.runningCalls().isEmpty)
        try pane.keys("C-c")
        let screen = try pane.waitForScreen("the await cancelled") { $0.components(separatedBy: "interrupted (the call was cancelled)").count == 3 }
        #expect(screen.contains("> if (true) {\n... ^C\n> [1,\n... .break\n> 40 + 2\n42\n"), "\(screen)")
        #expect(try client.call("macro.running") == [])
        try pane.keys("C-d")
        _ = try pane.waitForScreen("the exit") { $0.contains("EXIT=0") }
    }
}

/// Ctrl-C on `macro run` ended the client and left the call running until its
/// limit. Now the call is cancelled in the daemon (its changes rolled back) and `run` exits 130.
@Suite("macro run and Ctrl-C", .serialized)
struct RunInterruptTests {
    @Test func ctrlCOnRunCancelsTheCallInTheDaemon() throws {
        let daemon = try DaemonProcess(
            files: ["spin.js": "function spin() { progress.inner = 7; var t = Date.now(); while (Date.now() - t < 30000) {} return 1 }"],
            config: "time_limit_ms: 60000\ncall_deadline_ms: 60000\n")
        let dir = TemporaryDirectory()
        let macro = BinaryRunner.binDirectory + "/macro"
        let pane = try EditTests.Pane(dir: dir, command: "\(macro) run spin --socket '\(daemon.socket)'; echo EXIT=$?; sleep 600")
        let client = try daemon.client()
        #expect(try client.runningCalls().first?["name"] == "spin")
        try pane.keys("C-c")
        let screen = try pane.waitForScreen("the cancel") { $0.contains("EXIT=") }
        #expect(screen.contains("macro: spin: cancelled (Ctrl-C); its changes were rolled back"), "\(screen)")
        #expect(screen.contains("EXIT=130"), "\(screen)")
        // Stopped in the daemon, not left running after the client went away.
        #expect(try client.call("macro.running") == [])
        #expect(try client.call("progress.get")["inner"] == 0)
    }
}
