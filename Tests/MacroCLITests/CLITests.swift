import Foundation
import MacroEngineCore
import MacroTestSupport
import Testing

/// Runs the real `macro` binary against temporary macro directories and state files.
@Suite("macro CLI end to end")
struct CLITests {
    /// A macros directory with the demo's template and a few test macros, plus a state path.
    final class Fixture: Sendable {
        let dir = TemporaryDirectory()
        var macros: String { dir.url("macros") }
        var state: String { dir.url("state/state.json") }
        init() throws {
            try dir.write("macros/random.js", try demoTemplate())
            try dir.write("macros/echo.js", "function() { return Array.prototype.slice.call(arguments) }")
            try dir.write("macros/boom.js", "// throws\nfunction() {\n  progress.inner = 9;\n  throw new Error('boom at ' + progress.inner);\n}\n")
            try dir.write("macros/spin.js", "function() {\n  while (true) {}\n}\n")
            try dir.write("macros/broken.js", "function() {\n  var x = ;\n}\n")
        }
        func run(_ arguments: String...) throws -> ProcessResult {
            // --state only where the command keeps progress values.
            let stateful = ["run", "set", "progress", "repl"].contains(arguments.first ?? "")
            return try BinaryRunner.macro(arguments: arguments + ["--macros", macros] + (stateful ? ["--state", state] : []))
        }
        func json(_ result: ProcessResult) throws -> MacroValue { try MacroValue(jsonText: result.stdout) }
    }

    @Test func theDemoTemplateMovesAllRingsAndRunsAccumulate() throws {
        let f = try Fixture()
        let first = try f.run("run", "random", "--json")
        #expect(first.status == 0, "\(first)")
        let second = try f.run("run", "random", "--json")
        #expect(second.status == 0, "\(second)")
        let a = try f.json(first)["progress"], b = try f.json(second)["progress"]
        #expect(try f.json(first)["result"] == .null)
        for channel in ["inner", "middle", "outer"] {
            let x = try #require(a[channel].doubleValue), y = try #require(b[channel].doubleValue)
            #expect(x > 0 && x <= 1, "first run moves \(channel) by Math.random()")
            #expect(y >= x && y <= 10, "second run continues from the first")
        }
        // The state file holds exactly what was printed.
        let saved = try StateStore(path: f.state).load()
        guard case .loaded(let values) = saved else {
            Issue.record("state not saved: \(saved)")
            return
        }
        #expect(values == ["inner": b["inner"].doubleValue!, "middle": b["middle"].doubleValue!, "outer": b["outer"].doubleValue!])
    }

    @Test func textOutputShowsResultAndValues() throws {
        let f = try Fixture()
        try StateStore(path: f.state).save(["inner": 1, "middle": 2.5, "outer": 10])
        let result = try f.run("run", "echo", "inner", "2.5", "-3", "[1,{\"a\":true}]", "\"7\"", "not json{")
        #expect(result.status == 0, "\(result)")
        #expect(
            result.stdout == """
                result: ["inner",2.5,-3,[1,{"a":true}],"7","not json{"]
                inner   1.00
                middle  2.50
                outer   10.00

                """)
        #expect(result.stderr == "")
    }

    @Test func aThrowingMacroExits65WithPositionAndStackAndSavesNothing() throws {
        let f = try Fixture()
        try StateStore(path: f.state).save(["inner": 1, "middle": 1, "outer": 1])
        let result = try f.run("run", "boom")
        #expect(result.status == 65)
        let file = f.macros + "/boom.js"
        #expect(
            result.stderrLines == [
                "\(file):4:18: error: Error: boom at 9",
                "    at boom (\(file):4:18)",
                "",
            ])
        #expect(result.stdout == "")
        #expect(try StateStore(path: f.state).load() == .loaded(["inner": 1, "middle": 1, "outer": 1]))

        let json = try f.run("run", "boom", "--json")
        #expect(json.status == 65)
        let error = try f.json(json)["error"]
        #expect(
            error == [
                "code": 65, "kind": "threw", "message": "boom at 9", "name": "Error", "macro": "boom", "file": .string(file), "line": 4, "column": 18,
                "stack": .string("boom@\(file):4:18"),
            ])
    }

    @Test func aRunawayMacroExits75() throws {
        let f = try Fixture()
        let result = try f.run("run", "spin", "--timeout-ms", "300")
        #expect(result.status == 75, "\(result)")
        // The position is the loop that was running when the watchdog stopped it.
        #expect(result.stderr == "\(f.dir.url("macros/spin.js")):2:3: error: timed out after 300 ms\n    at spin (\(f.dir.url("macros/spin.js")):2:3)\n")
    }

    @Test func theTimeLimitComesFromTheConfig() throws {
        let f = try Fixture()
        let config = try f.dir.write("config.yaml", "time_limit_ms: 150\nmacros_dir: macros\nstate_file: state/state.json\n")
        let result = try BinaryRunner.macro("run", "spin", "--config", config)
        #expect(result.status == 75)
        #expect(result.stderr == "\(f.dir.url("macros/spin.js")):2:3: error: timed out after 150 ms\n    at spin (\(f.dir.url("macros/spin.js")):2:3)\n")
    }

    @Test func aBrokenMacroFileExits65WithItsPosition() throws {
        let f = try Fixture()
        let result = try f.run("run", "broken")
        #expect(result.status == 65)
        #expect(result.stderr == "\(f.macros)/broken.js:2:11: error: SyntaxError: Unexpected token ';'\n")
    }

    @Test func unknownMacroExits66() throws {
        let f = try Fixture()
        let result = try f.run("run", "nope")
        #expect(result.status == 66)
        #expect(result.stderr == "nope: error: no macro named 'nope' in \(f.macros) (available: boom, echo, random, spin)\n")
        let missingDir = try BinaryRunner.macro("run", "x", "--macros", f.dir.url("absent"))
        #expect(missingDir.status == 66)
    }

    @Test func usageErrorsExit64() throws {
        let f = try Fixture()
        #expect(try BinaryRunner.macro("run").status == 64)
        #expect(try f.run("run", "random", "--timeout-ms", "0").status == 64)
        #expect(try BinaryRunner.macro("frobnicate").status == 64)
    }

    @Test func checkReportsCompilerStyleAndExits1WhileListShowsTheRestOk() throws {
        let f = try Fixture()
        let check = try f.run("check")
        #expect(check.status == 1)
        #expect(
            check.stderrLines == [
                "\(f.macros)/broken.js:2:11: error: SyntaxError: Unexpected token ';'",
                "checked 5 files: 1 error",
                "",
            ])
        let single = try f.run("check", f.macros + "/random.js")
        #expect(single.status == 0)
        #expect(single.stderr == "checked 1 file: 0 errors\n")

        let list = try f.run("list", "--json")
        #expect(list.status == 0)
        let entries = try #require(try f.json(list).arrayValue)
        #expect(
            entries.map { "\($0["name"].stringValue!)=\($0["status"].stringValue!)" } == [
                "boom=ok", "broken=error", "echo=ok", "random=ok", "spin=ok",
            ])
        #expect(entries[1]["error"] == ["message": "SyntaxError: Unexpected token ';'", "line": 2, "column": 11])

        let text = try f.run("list")
        #expect(text.stdout.contains("broken  error   \(f.macros)/broken.js\n"))
        #expect(text.stdout.contains("random  ok      \(f.macros)/random.js\n"))
    }

    @Test func checkWorksOnAnyFileWithoutAMacrosDirectory() throws {
        let dir = TemporaryDirectory()
        let file = try dir.write("draft.js", "function() {\n  return 1 +* 2\n}\n")
        let result = try BinaryRunner.macro("check", file, currentDirectory: dir.path)
        #expect(result.status == 1)
        #expect(result.stderrLines.first == "\(file):2:13: error: SyntaxError: Unexpected token '*'")
    }

    @Test func showPrintsTheSourceVerbatim() throws {
        let f = try Fixture()
        let result = try f.run("show", "boom")
        #expect(result.status == 0)
        #expect(result.stdout == (try f.dir.read("macros/boom.js")))
        #expect(try f.run("show", "../etc/passwd").status == 66)
    }

    @Test func aCorruptStateFileIsKeptAsideAndReplaced() throws {
        let f = try Fixture()
        try f.dir.write("state/state.json", "{ this is not json")
        let result = try f.run("run", "echo", "--json")
        #expect(result.status == 0, "\(result)")
        #expect(result.stderr.hasPrefix("macro: warning: state file \(f.state) is corrupt (not valid state JSON"))
        #expect(try f.json(result)["progress"] == ["inner": 0, "middle": 0, "outer": 0])
        let kept = try FileManager.default.contentsOfDirectory(atPath: f.dir.url("state")).filter { $0.hasPrefix("state.json.corrupt-") }
        #expect(kept.count == 1)
        #expect(try f.dir.read("state/\(kept[0])") == "{ this is not json")
    }

    /// Saved values out of range were clamped silently, and a garbled journal
    /// was ignored silently; in-process runs say so on stderr too.
    @Test func outOfRangeValuesAndAGarbledJournalAreWarnedAbout() throws {
        let f = try Fixture()
        try f.dir.write("state/state.json", "{\"version\": 1, \"progress\": {\"inner\": 12, \"middle\": 0, \"outer\": 0}}\n")
        try f.dir.write("state/state.json.journal", "garbage\n")
        let result = try f.run("run", "echo", "--json")
        #expect(result.status == 0, "\(result)")
        let kept = try FileManager.default.contentsOfDirectory(atPath: f.dir.url("state")).filter { $0.hasPrefix("state.json.journal.corrupt-") }
        #expect(kept.count == 1)
        #expect(
            result.stderr == """
                macro: warning: state journal \(f.state).journal: line 1 cannot be used (not JSON: unexpected character 'g'); kept as \(f.dir.url("state"))/\(kept.first ?? "") (never deleted); no line is usable: the state file's values are used
                macro: warning: state file \(f.state): the saved value 12 of 'inner' is outside its range 0...10; clamped to 10

                """)
        #expect(try f.json(result)["progress"] == ["inner": 10, "middle": 0, "outer": 0])
        #expect(try f.dir.read("state/\(kept.first ?? "")") == "garbage\n")
    }

    @Test func anInvalidConfigExits78NamingKeyAndFile() throws {
        let f = try Fixture()
        let config = try f.dir.write("bad.yaml", "time_limt_ms: 10\n")
        let result = try BinaryRunner.macro("list", "--config", config)
        #expect(result.status == 78)
        #expect(
            result.stderr
                == "macro: invalid config: \(config): key 'time_limt_ms': unknown key (known keys: macros_dir, state_file, time_limit_ms, log_level, allow_eval, progress, socket, shutdown_grace_ms, max_line_bytes, allowed_uids, engine_eval, queue_limit, call_deadline_ms, fsync, fsync_interval_ms, memory_limit_mb, io_thread, connection_in_flight, connection_buffer_bytes, harden_builtins, stall_grace_ms, stall_quarantine, http, http_allow_remote, log_format, store_limit_bytes, record_runs, runs_kept, failed_runs_kept, runs_bytes, history_versions, history_bytes, audit_entries)\n"
        )
    }

    @Test func theShippedTypeDeclarationsAreFresh() throws {
        let result = try BinaryRunner.macro("types", "--macros", repositoryRoot + "/macros")
        #expect(result.status == 0, "\(result)")
        let shipped = try String(contentsOfFile: repositoryRoot + "/macros/globals.d.ts", encoding: .utf8)
        #expect(result.stdout == shipped, "macros/globals.d.ts is stale: run `macro types --macros macros > macros/globals.d.ts`")
    }

    @Test func typesListMacrosWithTheirParameters() throws {
        let f = try Fixture()
        try f.dir.write("macros/lib/util.js", "function helper(a, b = 2) { return a + b }\nvar LIMIT = 3;")
        try f.dir.write("macros/later.js", "async function(delay, ...rest) { await sleep(delay) }")
        try f.dir.write("macros/named.js", "function named(a) { return a }")
        let result = try f.run("types")
        #expect(result.status == 0)
        let lines = result.stdout.split(separator: "\n").map(String.init)
        #expect(lines.contains("declare function setInnerProgress(value: number): void;"))
        #expect(lines.contains("declare const progress: { inner: number; middle: number; outer: number; };"))
        #expect(lines.contains("declare function sleep(ms: number): Promise<void>;"))
        // Lib code and named macros declare themselves in the editor's project (TS2384 otherwise).
        #expect(!lines.contains { $0.contains("helper") || $0.contains("LIMIT") || $0.contains("named") })
        // A bare function expression declares no name: the d.ts does.
        #expect(lines.contains("declare function later(delay?: any, ...rest: any[]): Promise<any>;"))
        #expect(lines.contains("declare function echo(): any;"))
        #expect(!lines.contains { $0.contains("broken") })
    }

    @Test func theReplEvaluatesLinesContinuesIncompleteInputAndShowsErrors() throws {
        let f = try Fixture()
        let input = "1 + 2\nfunction f(x) {\n  return x * 2\n}\nf(21)\n'hi'\n({a: [1, {b: 2}]})\nnull.x\nsleep(5).then(() => 7)\necho(1, 2)\n.exit\n"
        let result = try BinaryRunner.run("macro", ["repl", "--local", "--macros", f.macros, "--state", f.state], input: input)
        #expect(result.status == 0, "\(result)")
        #expect(
            result.stdout == """
                3
                undefined
                42
                "hi"
                { a: [ 1, { b: 2 } ] }
                <repl>:1:5: error: TypeError: null is not an object (evaluating 'null.x')
                7
                [ 1, 2 ]

                """)
    }

    @Test func helpDocumentsTheExitCodes() throws {
        let help = try BinaryRunner.macro("--help")
        #expect(help.status == 0)
        for line in ["65  the macro threw", "66  no such macro", "75  the macro ran past its time limit", "64  usage error", "69  no daemon answers", "77  the daemon refused"] {
            #expect(help.stdout.contains(line), "\(line)")
        }
        let runHelp = try BinaryRunner.macro("run", "--help")
        #expect(runHelp.stdout.contains("--timeout-ms <n>"))
    }
}
