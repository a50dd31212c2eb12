import Foundation
import MacroEngineCore
import MacroTestSupport
import Testing

/// Bombs of many small objects cost the process 1.5x to 3x what the heap
/// reports live, so they reached the stall watch's 1.5 x `memory_limit_mb` (an engine restart,
/// exit 75 "in JavaScript the watchdog cannot reach") before the watchdog's memory verdict. In
/// their own process (macro-local, as a user runs them), they end in-process now: exit 65, kind
/// memoryLimit, nothing saved.
@Suite("Memory bombs end in-process")
struct MemoryBombTests {
    @Test(arguments: [
        "var m = new Map(); for (var i = 0; ; i++) m.set(i, {i: i});",
        "var s = new Set(); for (var i = 0; ; i++) s.add('s' + i);",
        "var a = []; for (var i = 0; ; i++) a.push({a: i, b: [i]});",
        "var o = {}; for (var i = 0; ; i++) o['k' + i] = i;",
        "var keys = []; for (var i = 0; i < 2e6; i++) keys.push('k' + i); for (;;) Object.keys(new Proxy({}, { ownKeys: function () { return keys; } }));",
    ])
    func aBombOfSmallObjectsIsStoppedByTheMemoryLimitNotAnEngineRestart(_ bomb: String) throws {
        // Long time limit and grace: only memory can end it.
        let (run, dir) = try Self.runLocal(
            "bomb", "function bomb() {\n  progress.inner = 3;\n  \(bomb)\n}\n",
            config: "memory_limit_mb: 128\ntime_limit_ms: 120000\ncall_deadline_ms: 120000\nstall_grace_ms: 60000\n")
        #expect(run.status == 65, "\(run)")
        let error = try MacroValue(jsonText: run.stdout)["error"]
        #expect(error["kind"] == "memoryLimit", "\(run)")
        #expect(error["file"] == .string(dir.url("macros/bomb.js")), "\(run)")
        // The heap's own verdict or the process's (1.25 x), never the stall watch's 1.5 x.
        let message = error["message"].stringValue ?? ""
        #expect(message.hasPrefix("stopped: the "), "\(run)")
        #expect(message.hasSuffix(" 128 MiB limit (memory_limit_mb)"), "\(run)")
        let progress = try BinaryRunner.macro(arguments: [
            "progress", "--local", "--json", "--macros", dir.url("macros"), "--config", dir.url("config.yaml"), "--state", dir.url("state.json"),
        ])
        #expect(try MacroValue(jsonText: progress.stdout)["inner"] == 0, "\(progress)")
    }

    /// Garbage is not a bomb: a loop that makes only garbage outside the JavaScript heap (ICU's)
    /// grows the process past 1.25 x the limit between collections; it runs to its time limit and
    /// ends as a runaway (exit 75, timeout), not as a memory bomb.
    @Test func aLoopThatMakesOnlyGarbageEndsAsARunaway() throws {
        let (run, _) = try Self.runLocal(
            "garbage", "function garbage() {\n  for (;;) new Date().toLocaleString();\n}\n",
            config: "memory_limit_mb: 128\ntime_limit_ms: 4000\ncall_deadline_ms: 60000\nstall_grace_ms: 60000\n")
        #expect(run.status == 75, "\(run)")
        let error = try MacroValue(jsonText: run.stdout)["error"]
        #expect(error["kind"] == "timeout", "\(run)")
        #expect(error["message"] == "timed out after 4000 ms", "\(run)")
    }

    /// `macro run NAME --local --json` on a directory holding `NAME.js` and `config`.
    private static func runLocal(_ name: String, _ source: String, config: String) throws -> (ProcessResult, TemporaryDirectory) {
        let dir = TemporaryDirectory(prefix: name)
        try dir.write("macros/\(name).js", source)
        try dir.write("config.yaml", config)
        let run = try BinaryRunner.macro(arguments: [
            "run", name, "--local", "--json", "--macros", dir.url("macros"), "--config", dir.url("config.yaml"), "--state", dir.url("state.json"),
        ])
        return (run, dir)
    }
}
