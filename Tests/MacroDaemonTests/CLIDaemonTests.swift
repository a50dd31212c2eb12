import Foundation
import MacroEngineCore
import MacroRPC
import MacroTestSupport
import Testing

/// The `macro` CLI talking to a real macrod.
@Suite("macro CLI against macrod")
struct CLIDaemonTests {
    static let files = [
        "bump.js": "function(channel, amount) { progress[channel] += amount; return progress[channel] }",
        "boom.js": "function() {\n  throw new RangeError('out of range');\n}",
        "spin.js": "function() { while (true) {} }",
    ]

    @Test func runUsesTheDaemon() throws {
        let daemon = try DaemonProcess(files: Self.files)
        let result = try BinaryRunner.macro("run", "bump", "inner", "2.5", "--socket", daemon.socket)
        #expect(result.status == 0, "\(result)")
        #expect(result.stdout == "result: 2.5\ninner   2.50\nmiddle  0.00\nouter   0.00\n")
        // MACROENGINE_SOCKET names the daemon for every client.
        let env = try BinaryRunner.macro("run", "bump", "outer", "1", "--json", environment: ["MACROENGINE_SOCKET": daemon.socket])
        #expect(try MacroValue(jsonText: env.stdout) == ["macro": "bump", "result": 1, "progress": ["inner": 2.5, "middle": 0, "outer": 1]])
        #expect(try daemon.client().call("progress.get") == ["inner": 2.5, "middle": 0, "outer": 1])
        // --local runs in-process even with a daemon answering.
        let local = try BinaryRunner.macro(
            "run", "bump", "outer", "1", "--local", "--macros", daemon.macros, "--state", daemon.dir.url("local.json"),
            environment: ["MACROENGINE_SOCKET": daemon.socket])
        #expect(local.stdout.hasPrefix("result: 1\n"))
        #expect(try daemon.client().call("progress.get")["outer"] == 1)
    }

    @Test func historyDiffRollbackAndAuditFromTheCommandLine() throws {
        let daemon = try DaemonProcess(files: ["level.js": "function level() { return 1 }\n"])
        let client = try daemon.client()
        for n in 2...4 { _ = try client.call(.save, ["name": "level", "source": .string("function level() { return \(n) }\n")]) }
        let diff = try BinaryRunner.macro("diff", "level@1", "level@4", "--socket", daemon.socket)
        #expect(diff.status == 0, "\(diff)")
        #expect(diff.stdout == "--- level@1\n+++ level@4\n@@ -1 +1 @@\n-function level() { return 1 }\n+function level() { return 4 }\n")
        // Version 1 is the one saved three saves before the current one.
        let rollback = try BinaryRunner.macro("rollback", "level@1", "--socket", daemon.socket)
        #expect(rollback.status == 0, "\(rollback)")
        #expect(rollback.stdout == "level: version 1 restored and live, as version 5\n")
        #expect(try client.call(.call, ["name": "level"]) == 1)
        #expect(try String(contentsOfFile: daemon.macros + "/level.js", encoding: .utf8) == "function level() { return 1 }\n")
        let history = try BinaryRunner.macro("history", "level", "--socket", daemon.socket)
        let rows = history.stdout.split(separator: "\n")
        #expect(rows.count == 6)
        #expect(rows.last?.hasPrefix("* 5 ") == true, "\(history.stdout)")
        #expect(rows.last?.contains(" socket uid \(getuid()) pid ") == true && rows.last?.hasSuffix(" (rollback to 1)") == true, "\(history.stdout)")
        let audit = try BinaryRunner.macro("audit", "--kind", "rollback", "--json", "--socket", daemon.socket)
        let events = audit.stdout.split(separator: "\n").map { try? MacroValue(jsonText: String($0)) }
        #expect(events.count == 1)
        #expect(events.first??["who"]["surface"] == "socket")
        #expect(events.first??["who"]["uid"] == .number(Double(getuid())))
        #expect(events.first??["details"] == ["restored": 1])
        #expect(try BinaryRunner.macro("rollback", "level", "--socket", daemon.socket).status == 64)
        #expect(try BinaryRunner.macro("diff", "level@9", "--socket", daemon.socket).status == 66)

        // The store, edited and read from the command line: a VALUE is JSON when it parses,
        // else a string.
        func store(_ arguments: String...) throws -> ProcessResult { try BinaryRunner.macro(arguments: ["store"] + arguments + ["--socket", daemon.socket]) }
        #expect(try store().stderr == "no macro has anything in its store\n")
        #expect(try store("level", "count", "3").status == 0)
        #expect(try store("level", "note", "hello there").status == 0)
        #expect(try store("level", "count").stdout == "3\n")
        #expect(try store("level", "note").stdout == "\"hello there\"\n")
        let keys = try store("level")
        #expect(Set(keys.stdout.split(separator: "\n")) == ["count\t3", "note\t\"hello there\""], "\(keys)")
        #expect(try store().stdout.hasPrefix("level  2 key(s), "))
        #expect(try store("level", "count", "--delete").status == 0)
        let gone = try store("level", "count")
        #expect(gone.status == 66)
        #expect(gone.stderr.contains("level: no key 'count' in its store"), "\(gone)")
        #expect(try store("level", "--delete").status == 64)
        let edits = try BinaryRunner.macro("audit", "--kind", "storeEdit", "--json", "--socket", daemon.socket)
        let ops = edits.stdout.split(separator: "\n").map { (try? MacroValue(jsonText: String($0)))?["details"]["op"] ?? .undefined }
        #expect(ops == ["set", "set", "delete"], "\(edits)")
    }

    @Test func daemonErrorsExitLikeLocalOnes() throws {
        let daemon = try DaemonProcess(files: Self.files)
        let boom = try BinaryRunner.macro("run", "boom", "--socket", daemon.socket)
        #expect(boom.status == 65)
        #expect(boom.stderr == "\(daemon.macros)/boom.js:2:23: error: RangeError: out of range\n    at boom (\(daemon.macros)/boom.js:2:23)\n")
        let spin = try BinaryRunner.macro("run", "spin", "--timeout-ms", "300", "--socket", daemon.socket)
        #expect(spin.status == 75)
        // The loop that was running, by line and column (`while` is at column 14).
        #expect(spin.stderr == "\(daemon.macros)/spin.js:1:14: error: timed out after 300 ms\n    at spin (\(daemon.macros)/spin.js:1:14)\n")
        let missing = try BinaryRunner.macro("run", "ghost", "--socket", daemon.socket)
        #expect(missing.status == 66)
    }

    @Test func anExplicitSocketThatDoesNotAnswerExits69() throws {
        let dir = TemporaryDirectory()
        let result = try BinaryRunner.macro("run", "bump", "--socket", dir.url("none.sock"))
        #expect(result.status == 69)
        #expect(result.stderr == "macro: no daemon answers at \(dir.url("none.sock")): No such file or directory\n")
        #expect(try BinaryRunner.macro("status", "--socket", dir.url("none.sock")).status == 69)
        #expect(try BinaryRunner.macro("progress", "--watch", "--socket", dir.url("none.sock")).status == 69)
    }

    @Test func setProgressStatusAndLogs() throws {
        let daemon = try DaemonProcess(files: Self.files)
        let set = try BinaryRunner.macro("set", "outer", "40", "--json", "--socket", daemon.socket)
        #expect(set.status == 0)
        #expect(set.stdout == #"{"inner":0,"middle":0,"outer":10}"# + "\n")
        let bad = try BinaryRunner.macro("set", "sideways", "1", "--socket", daemon.socket)
        #expect(bad.status == 64)
        #expect(bad.stderr == "macro: Invalid params: unknown channel 'sideways' (channels: inner, middle, outer)\n")
        let progress = try BinaryRunner.macro("progress", "--socket", daemon.socket)
        #expect(
            progress.stdout == """
                inner   ░░░░░░░░░░░░░░░░░░░░░░░░░░░░░░  0.00
                middle  ░░░░░░░░░░░░░░░░░░░░░░░░░░░░░░  0.00
                outer   ██████████████████████████████  10.00

                """)
        let status = try BinaryRunner.macro("status", "--json", "--socket", daemon.socket)
        let json = try MacroValue(jsonText: status.stdout)
        #expect(json["macros"] == ["ok": 3, "broken": 0])
        #expect(json["socket"] == .string(daemon.socket))
        _ = try BinaryRunner.macro("run", "boom", "--socket", daemon.socket)
        let logs = try BinaryRunner.macro("logs", "--socket", daemon.socket)
        #expect(logs.status == 0)
        #expect(logs.stdout.contains("error RangeError: out of range"))
    }

    @Test func progressWatchPrintsEveryChange() throws {
        let daemon = try DaemonProcess(files: Self.files)
        let watch = try BackgroundProcess("macro", ["progress", "--watch", "--json", "--socket", daemon.socket])
        #expect(try watch.nextLine() == #"{"inner":0,"middle":0,"outer":0}"#)
        let client = try daemon.client()
        try client.call("macro.call", ["name": "bump", "args": ["inner", 1]])
        try client.call("macro.call", ["name": "bump", "args": ["inner", 1]])
        #expect(try watch.nextLine() == #"{"inner":1,"middle":0,"outer":0,"seq":1}"#)
        #expect(try watch.nextLine() == #"{"inner":2,"middle":0,"outer":0,"seq":2}"#)
    }

    @Test func editReportsWhetherTheNewVersionLoaded() throws {
        let daemon = try DaemonProcess(files: Self.files)
        let good = try daemon.dir.write("good.js", "function() { return 'edited' }")
        let result = try BinaryRunner.macro("edit", "bump", "--socket", daemon.socket, environment: ["EDITOR": "cp \(good)", "VISUAL": ""])
        #expect(result.status == 0, "\(result)")
        #expect(result.stdout == "bump loaded (version 2)\n")
        #expect(try daemon.client().call("macro.call", ["name": "bump"]) == "edited")

        let bad = try daemon.dir.write("bad.js", "function() {\n  return 1 +;\n}")
        let broken = try BinaryRunner.macro("edit", "bump", "--socket", daemon.socket, environment: ["EDITOR": "cp \(bad)", "VISUAL": ""])
        #expect(broken.status == 65)
        #expect(broken.stderr == "\(daemon.macros)/bump.js:2:13: error: SyntaxError: Unexpected token ';'\nthe previous version stays live until the file loads\n")
        #expect(try daemon.client().call("macro.call", ["name": "bump"]) == "edited")
    }
}
