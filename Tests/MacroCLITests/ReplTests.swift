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
        let pane = try EditTests.Pane(dir: dir, command: "env XDG_STATE_HOME='\(dir.url("xdg"))' \(macro) repl --local --macros '\(dir.url("macros"))' --state '\(dir.url("state.json"))'; echo EXIT=$?; sleep 600")
        _ = try pane.waitForScreen("the banner") { $0.contains("REPL (in-process") }
        try pane.keys("counter = 41", "Enter")
        // (The line is echoed before it runs: wait for its own output, then press Ctrl-C.)
        try pane.keys("console.log('running'); await sleep(20000)", "Enter")
        _ = try pane.waitForScreen("the call running") { $0.contains("[macro] running") }
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
}
