import Foundation
import MacroEngineCore
import MacroRPC
import MacroTestSupport
import Testing

/// The CLI against a real macrod: one view of the macros, console forwarding, lib files,
/// following commands that end when the daemon stops.
@Suite("macro CLI with a daemon")
struct DaemonCLITests {
    static let files = [
        "talk.js": "function talk(x) {\n  console.log('hello', x);\n  console.warn('careful');\n  return x;\n}\n",
        "fill.js": "function fill() {\n  setAll(10);\n}\n",
        "lib/rings.js": "function setAll(v) {\n  progress.inner = v;\n  progress.middle = v\n  progress.outer = v; +\n}\n",
    ]

    @Test func listShowCheckAndTypesAskTheDaemonFromAnyDirectory() throws {
        let daemon = try DaemonProcess(files: Self.files)
        let elsewhere = TemporaryDirectory()
        let list = try BinaryRunner.macro("list", "--json", "--socket", daemon.socket, currentDirectory: elsewhere.path)
        #expect(list.status == 0, "\(list)")
        let entries = try #require(try MacroValue(jsonText: list.stdout).arrayValue)
        #expect(
            entries.map { "\($0["name"].stringValue ?? "-"):\($0["kind"].stringValue ?? "-"):\($0["status"].stringValue ?? "-")" } == [
                "fill:macro:ok", "talk:macro:ok", "lib/rings:lib:error",
            ])

        let show = try BinaryRunner.macro("show", "talk", "--socket", daemon.socket, currentDirectory: elsewhere.path)
        #expect(show.status == 0)
        #expect(show.stdout == Self.files["talk.js"])

        let check = try BinaryRunner.macro("check", "--socket", daemon.socket, currentDirectory: elsewhere.path)
        #expect(check.status == 1, "\(check)")
        #expect(check.stderrLines.last(where: { !$0.isEmpty }) == "checked 3 files: 1 error")
        #expect(check.stderr.hasPrefix("\(daemon.macros)/lib/rings.js:"))

        let types = try BinaryRunner.macro("types", "--socket", daemon.socket, currentDirectory: elsewhere.path)
        #expect(types.status == 0, "\(types)")
        #expect(types.stdout.contains("declare function setInnerProgress(value: number): void;"))
    }

    /// `macro --socket S run x` was refused, though every command takes
    /// --socket; options every command takes may come before its name.
    @Test func optionsEveryCommandTakesMayComeFirst() throws {
        let daemon = try DaemonProcess(files: Self.files)
        let run = try BinaryRunner.macro("--socket", daemon.socket, "--json", "run", "talk", "7")
        #expect(run.status == 0, "\(run)")
        #expect(try MacroValue(jsonText: run.stdout)["result"] == 7)
        let status = try BinaryRunner.macro("--socket=\(daemon.socket)", "status")
        #expect(status.status == 0, "\(status)")
        #expect(status.stdout.contains("calls        1 macro calls"), "\(status.stdout)")
        let bogus = try BinaryRunner.macro("--bogus", "run", "talk")
        #expect(bogus.status == 64)
    }

    /// `macro show lib/rings` was refused, though `macro list` lists it.
    @Test func showPrintsALibFileAsListNamesIt() throws {
        let daemon = try DaemonProcess(files: Self.files)
        let shown = try BinaryRunner.macro("show", "lib/rings", "--socket", daemon.socket)
        #expect(shown.status == 0, "\(shown)")
        #expect(shown.stdout == Self.files["lib/rings.js"])
        let missing = try BinaryRunner.macro("show", "lib/nope", "--socket", daemon.socket)
        #expect(missing.status == 66)
        #expect(missing.stderr == "macro: no lib file named 'lib/nope'\n")
    }

    @Test func consoleOutputOfADaemonCallIsPrintedOnStderr() throws {
        let daemon = try DaemonProcess(files: Self.files)
        let result = try BinaryRunner.macro("run", "talk", "5", "--socket", daemon.socket)
        #expect(result.status == 0, "\(result)")
        #expect(result.stderr == "[talk] hello 5\n[talk] warning: careful\n")
        #expect(result.stdout.hasPrefix("result: 5\n"))
    }

    @Test func statusCountsBrokenLibFiles() throws {
        let daemon = try DaemonProcess(files: Self.files)
        let status = try BinaryRunner.macro("status", "--socket", daemon.socket)
        #expect(status.status == 0)
        #expect(status.stdout.contains("\nlib          0 ok, 1 broken\n"), "\(status)")
    }

    @Test func aConfigNamesItsDaemonThroughItsSocket() throws {
        let daemon = try DaemonProcess(files: Self.files)
        let dir = TemporaryDirectory()
        let config = try dir.write("client.yaml", "socket: \(daemon.socket)\n")
        let list = try BinaryRunner.macro("list", "--json", "--config", config, currentDirectory: dir.path)
        #expect(list.status == 0, "\(list)")
        let names = try MacroValue(jsonText: list.stdout).arrayValue?.filter { $0["kind"] != "lib" }.compactMap(\.["name"].stringValue)
        #expect(names == ["fill", "talk"])
    }

    @Test func followingCommandsExit69WithAClearLineWhenTheDaemonStops() throws {
        let daemon = try DaemonProcess(files: Self.files)
        let watch = try BackgroundProcess("macro", ["progress", "--watch", "--json", "--socket", daemon.socket])
        let logs = try BackgroundProcess("macro", ["logs", "--follow", "--json", "--lines", "1", "--socket", daemon.socket])
        #expect(try watch.nextLine()?.hasPrefix("{\"inner\"") == true)
        #expect(try logs.nextLine()?.hasPrefix("{") == true)
        daemon.stop()
        #expect(watch.waitForExit() == 69)
        #expect(logs.waitForExit() == 69)
    }

    @Test func logRecordsShowTheirTime() throws {
        let daemon = try DaemonProcess(files: Self.files)
        _ = try BinaryRunner.macro("run", "talk", "1", "--socket", daemon.socket)
        let logs = try BinaryRunner.macro("logs", "--socket", daemon.socket)
        #expect(logs.status == 0)
        let line = try #require(logs.stdout.split(separator: "\n").first { $0.contains("hello 1") })
        #expect(line.range(of: #"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} "#, options: .regularExpression) != nil, "\(line)")
    }
}

/// A socket we may not connect to: the message says so and does not advise starting macrod.
@Suite("macro CLI: refused connections")
struct RefusedConnectionTests {
    @Test func permissionDeniedExits77WithoutAdvisingToStartMacrod() throws {
        let daemon = try DaemonProcess(files: ["a.js": "function a() { return 1 }"])
        let result: ProcessResult
        if getuid() == 0 {
            // root passes every permission check: ask as nobody (the socket is 0600, its directory 0700).
            result = try BinaryRunner.run(
                "/usr/bin/setpriv", ["--reuid=nobody", "--regid=nogroup", "--clear-groups", BinaryRunner.binDirectory + "/macro", "status", "--socket", daemon.socket])
        } else {
            chmod(daemon.socket, 0)
            result = try BinaryRunner.macro("status", "--socket", daemon.socket)
        }
        #expect(result.status == 77, "\(result)")
        #expect(
            result.stderr
                == "macro status: macrod at \(daemon.socket) refused the connection: Permission denied (check the socket's owner and permissions, or the daemon's allowed_uids)\n")
        #expect(!result.stderr.contains("start it"))
    }
}

@Suite("macrod: the user's config file")
struct UserConfigTests {
    @Test func macrodReadsTheConfigInXDGConfigHome() throws {
        let home = TemporaryDirectory()
        try home.write("macroengine/macroengine.yaml", "engine_eval: true\n")
        let daemon = try DaemonProcess(files: ["a.js": "function a() { return 1 }"], environment: ["XDG_CONFIG_HOME": home.path])
        #expect(try daemon.client().call("engine.eval", ["source": "20 + 22"]) == 42)
        let without = try DaemonProcess(files: ["a.js": "function a() { return 1 }"])
        #expect(throws: RPCError.self) { try without.client().call("engine.eval", ["source": "1"]) }
    }
}
