import Foundation
import MacroEngineCore
import MacroTestSupport
import Testing

/// Arguments, usage errors, `--json` failures, messages and help of the real `macro` binary.
@Suite("macro CLI: arguments, --json, messages, help, completion")
struct CLIUsageTests {
    final class Fixture: Sendable {
        let dir = TemporaryDirectory()
        var macros: String { dir.url("macros") }
        var state: String { dir.url("state.json") }
        init() throws {
            try dir.write("macros/echo.js", "function echo() { return Array.prototype.slice.call(arguments) }\n")
            try dir.write("macros/talk.js", "function talk(x) { console.log('hello', x); console.warn('careful'); return x }\n")
        }
        func run(_ arguments: String...) throws -> ProcessResult {
            try BinaryRunner.macro(arguments: [arguments[0], "--macros", macros, "--state", state] + arguments.dropFirst())
        }
    }

    @Test func negativeNumbersAreValuesAndTheDoubleDashIsNotPassedOn() throws {
        let f = try Fixture()
        try StateStore(path: f.state).save(["inner": 5, "middle": 5, "outer": 5])
        let set = try f.run("set", "inner", "-2", "--json")
        #expect(set.status == 0, "\(set)")
        #expect(try MacroValue(jsonText: set.stdout) == ["inner": 0, "middle": 5, "outer": 5])
        let set2 = try f.run("set", "outer", "--json", "-2.5")
        #expect(try MacroValue(jsonText: set2.stdout)["outer"] == 0)

        let run = try f.run("run", "--json", "echo", "inner", "-2", "--", "-2.5", "--bogus", "--json")
        #expect(run.status == 0, "\(run)")
        #expect(try MacroValue(jsonText: run.stdout)["result"] == ["inner", -2, -2.5, "--bogus", "--json"])
    }

    @Test func unknownFlagsAndCommandsAreUsageErrors() throws {
        let f = try Fixture()
        let bogus = try f.run("run", "echo", "--bogus", "inner")
        #expect(bogus.status == 64)
        #expect(bogus.stderr.hasPrefix("Error: Unknown option '--bogus'\n"))
        #expect(bogus.stdout == "")

        let runn = try BinaryRunner.macro("runn", "echo")
        #expect(runn.status == 64)
        #expect(runn.stderr == "macro: unknown command 'runn'; did you mean 'run'? (see `macro --help`)\n")
        let lsit = try BinaryRunner.macro("lsit")
        #expect(lsit.stderr == "macro: unknown command 'lsit'; did you mean 'list'? (see `macro --help`)\n")

        let timeout = try f.run("run", "echo", "--timeout-ms", "-5")
        #expect(timeout.status == 64)
        #expect(timeout.stderr.hasPrefix("Error: --timeout-ms must be a whole number of milliseconds between 1 and 86400000, got '-5'\n"))
    }

    /// Every failure with `--json`: exactly one JSON object on stdout, numeric code, string kind.
    @Test func everyFailurePrintsOneJSONObjectWithANumericCodeAndAKind() throws {
        let f = try Fixture()
        try f.dir.write("macros/boom.js", "function boom() { throw new TypeError('no') }\n")
        let none = f.dir.url("none.sock")
        let cases: [([String], Int32, String)] = [
            (["run", "nope", "--macros", f.macros, "--state", f.state], 66, "noSuchMacro"),
            (["run", "boom", "--macros", f.macros, "--state", f.state], 65, "threw"),
            (["run", "echo", "--bogus", "--macros", f.macros], 64, "usage"),
            (["runn"], 64, "usage"),
            (["show", "nope", "--macros", f.macros], 66, "noSuchMacro"),
            (["list", "--macros", f.dir.url("absent")], 66, "noSuchMacro"),
            (["status", "--socket", none], 69, "unavailable"),
            (["logs", "--socket", none], 69, "unavailable"),
            (["running", "--socket", none], 69, "unavailable"),
            (["cancel", "3", "--socket", none], 69, "unavailable"),
            (["progress", "--watch", "--socket", none], 69, "unavailable"),
            (["run", "echo", "--socket", none], 69, "unavailable"),
            (["edit", "Math", "--macros", f.macros], 64, "invalidName"),
            (["set", "inner", "x", "--state", f.state], 64, "usage"),
            (["run", "echo", "--state", f.dir.path, "--macros", f.macros], 74, "io"),
            (["list", "--config", try f.dir.write("bad.yaml", "nope: 1\n")], 78, "config"),
        ]
        for (arguments, code, kind) in cases {
            let result = try BinaryRunner.macro(arguments: arguments + ["--json"])
            #expect(result.status == code, "\(arguments): \(result)")
            let lines = result.stdout.split(separator: "\n")
            #expect(lines.count == 1, "\(arguments): \(result)")
            let error = try MacroValue(jsonText: result.stdout)["error"]
            #expect(error["code"] == .number(Double(code)), "\(arguments): \(result)")
            #expect(error["kind"] == .string(kind), "\(arguments): \(result)")
            #expect(error["message"].stringValue?.isEmpty == false, "\(arguments): \(result)")
        }
    }

    @Test func aDirectoryAsStateFileIsNamedClearly() throws {
        let f = try Fixture()
        let result = try BinaryRunner.macro("run", "echo", "--state", f.dir.path, "--macros", f.macros)
        #expect(result.status == 74)
        #expect(result.stderr == "macro: the state file \(f.dir.path) is a directory; --state (or state_file) names a file, e.g. \(f.dir.path)/state.json\n")
    }

    @Test func eachSubcommandListsOnlyItsOptionsAndTheExitCodesStayIndented() throws {
        let status = try BinaryRunner.macro("status", "--help", environment: ["COLUMNS": "80"])
        #expect(status.status == 0)
        for absent in ["--macros", "--state", "--timeout-ms", "--local", "--verbose"] {
            #expect(!status.stdout.contains(absent), "status --help lists \(absent)")
        }
        #expect(status.stdout.contains("--socket <path>"))
        let run = try BinaryRunner.macro("run", "--help", environment: ["COLUMNS": "80"])
        for present in ["--macros <dir>", "--state <file>", "--timeout-ms <n>", "--local", "--socket <path>", "--json"] {
            #expect(run.stdout.contains(present), "run --help lacks \(present)")
        }
        let root = try BinaryRunner.macro("--help", environment: ["COLUMNS": "80"])
        let lines = root.stdout.split(separator: "\n", omittingEmptySubsequences: false)
        let start = try #require(lines.firstIndex { $0.contains("Exit codes:") })
        let table = lines[(start + 1)...].prefix { !$0.trimmingCharacters(in: .whitespaces).isEmpty }
        #expect(table.count == 12)
        for line in table {
            #expect(line.hasPrefix("  "), "wrapped to column 0: '\(line)'")
            #expect(line.count <= 80)
        }
        let examplesStart = try #require(lines.firstIndex { $0 == "Examples:" })
        let examples = lines[(examplesStart + 1)...].prefix { !$0.trimmingCharacters(in: .whitespaces).isEmpty }
        #expect(examples.count == 6)
        for line in examples { #expect(line.hasPrefix("  macro "), "wrapped to column 0: '\(line)'") }
    }

    /// `macro` alone printed the help and exited 0; it names no command, a
    /// usage error (64) like any other, with the help on stderr. `macro-local` alike.
    @Test func bareMacroIsAUsageErrorWithTheHelpOnStderr() throws {
        let help = try BinaryRunner.macro("--help", environment: ["COLUMNS": "80"])
        #expect(help.status == 0)
        #expect(help.stdout.hasPrefix("OVERVIEW: Run and inspect MacroEngine's JavaScript macros.\n"), "\(help)")
        for binary in ["macro", "macro-local"] {
            let bare = try BinaryRunner.run(binary, [], environment: ["COLUMNS": "80"])
            #expect(bare.status == 64, "\(binary): \(bare)")
            #expect(bare.stdout == "", "\(binary): \(bare)")
            #expect(bare.stderr == help.stdout, "\(binary): \(bare)")
        }
    }

    /// Each subcommand's `--help` repeated the root's whole exit-code table;
    /// it lists the codes that command exits with, the root all of them.
    @Test func aSubcommandsHelpListsOnlyTheExitCodesItUses() throws {
        func table(_ arguments: String...) throws -> [String] {
            let help = try BinaryRunner.macro(arguments: arguments, environment: ["COLUMNS": "100"])
            let lines = help.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            let start = try #require(lines.firstIndex { $0.trimmingCharacters(in: .whitespaces) == "Exit codes:" }, "\(arguments): \(help)")
            return lines[(start + 1)...].prefix { !$0.trimmingCharacters(in: .whitespaces).isEmpty }.map {
                String($0.trimmingCharacters(in: .whitespaces).prefix { $0.isNumber })
            }
        }
        let all = ["0", "1", "64", "65", "66", "69", "70", "71", "74", "75", "77", "78"]
        #expect(try table("--help") == all)
        let running = ["0", "64", "65", "66", "69", "70", "74", "75", "77", "78"]
        #expect(try table("run", "--help") == running)
        #expect(try table("profile", "--help") == running)
        #expect(try table("dashboard", "--help") == ["0", "64", "69", "70", "71", "77", "78"])
    }

    @Test func bashCompletionCompletesMacroAndChannelNames() throws {
        let f = try Fixture()
        let script = try BinaryRunner.macro("--generate-completion-script", "bash")
        let path = try f.dir.write("macro.bash", script.stdout)
        func complete(_ words: [String]) throws -> [String] {
            let line = words.joined(separator: " ")
            let driver = """
                source '\(path)'
                COMP_WORDS=(\(words.map { "'\($0)'" }.joined(separator: " "))); COMP_CWORD=\(words.count - 1)
                COMP_LINE='\(line)'; COMP_POINT=${#COMP_LINE}
                _macro macro '\(words.last!)' '\(words[words.count - 2])'
                printf '%s\\n' "${COMPREPLY[@]}"
                """
            let result = try BinaryRunner.run("/bin/bash", ["-c", driver], environment: ["PATH": BinaryRunner.binDirectory + ":/usr/bin:/bin"], currentDirectory: f.dir.path)
            return result.stdout.split(separator: "\n").map(String.init)
        }
        #expect(try complete(["macro", "run", "e"]) == ["echo"])
        #expect(try complete(["macro", "show", ""]) == ["echo", "talk"])
        #expect(try complete(["macro", "run", "echo", "mi"]) == ["middle"])
        #expect(try complete(["macro", "set", ""]) == ["inner", "middle", "outer"])
        for shell in ["zsh", "fish"] {
            let other = try BinaryRunner.macro("--generate-completion-script", shell)
            #expect(other.stdout.contains("---completion run -- positional@0"), "\(shell)")
        }
    }

    @Test func theUserConfigFileIsRead() throws {
        let f = try Fixture()
        try f.dir.write("xdg/macroengine/macroengine.yaml", "macros_dir: \(f.macros)\nstate_file: \(f.state)\n")
        let result = try BinaryRunner.macro("run", "echo", "7", "--json", environment: ["XDG_CONFIG_HOME": f.dir.url("xdg")], currentDirectory: "/")
        #expect(result.status == 0, "\(result)")
        #expect(try MacroValue(jsonText: result.stdout)["result"] == [7])
    }

    @Test func consoleOutputOfALocalRunGoesToStderr() throws {
        let f = try Fixture()
        let result = try f.run("run", "talk", "1")
        #expect(result.status == 0)
        #expect(result.stderr == "[talk] hello 1\n[talk] warning: careful\n")
    }
}

@Suite("macro CLI: lib files")
struct LibFileTests {
    @Test func aMissingHelperPointsAtTheBrokenLibFileAndCheckChecksLibFiles() throws {
        let dir = TemporaryDirectory()
        try dir.write("macros/fill.js", "function fill() {\n  setAll(10);\n}\n")
        let lib = try dir.write("macros/lib/rings.js", "function setAll(v) {\n  progress.inner = v;;\n  var = 3;\n}\n")
        let run = try BinaryRunner.macro("run", "fill", "--macros", dir.url("macros"), "--state", dir.url("state.json"))
        #expect(run.status == 65)
        #expect(
            run.stderrLines.contains(
                "note: lib/rings does not load, so what it defines is missing: \(lib):3:7: error: SyntaxError: Unexpected token '='. Expected a parameter pattern or a ')' in parameter list."
            ), "\(run)")

        let check = try BinaryRunner.macro("check", lib)
        #expect(check.status == 1)
        #expect(check.stderrLines.first?.hasPrefix("\(lib):3:") == true, "\(check)")
        let all = try BinaryRunner.macro("check", "--macros", dir.url("macros"))
        #expect(all.status == 1)
        #expect(all.stderrLines.last(where: { !$0.isEmpty }) == "checked 2 files: 1 error")
        let list = try BinaryRunner.macro("list", "--json", "--macros", dir.url("macros"))
        #expect(try MacroValue(jsonText: list.stdout).arrayValue?.map { $0["kind"] } == ["macro", "lib"])
    }
}
