import Foundation
import MacroEngineCore
import MacroTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `macro` links no JavaScriptCore; the commands that run the engine in-process reach it by
/// exec'ing `macro-local`, the executable beside it (README, "A thin macro").
@Suite("macro without the engine: the thin binary and macro-local")
struct ThinCLITests {
    static var macro: String { BinaryRunner.binDirectory + "/macro" }
    static var macroLocal: String { BinaryRunner.binDirectory + "/macro-local" }

    /// The libraries named in the ELF dynamic section (`NEEDED`), as `readelf -d` prints them.
    static func needed(_ binary: String) throws -> [String] {
        let result = try BinaryRunner.run("/usr/bin/readelf", ["-d", binary])
        #expect(result.status == 0, "\(result)")
        return result.stdout.split(separator: "\n").filter { $0.contains("(NEEDED)") }.compactMap { line in
            guard let open = line.firstIndex(of: "["), let close = line.lastIndex(of: "]") else { return nil }
            return String(line[line.index(after: open)..<close])
        }
    }

    /// Every library the loader maps for `binary`, direct or not (`ldd`), by file name.
    static func loaded(_ binary: String) throws -> [String] {
        let result = try BinaryRunner.run("/usr/bin/ldd", [binary])
        #expect(result.status == 0, "\(result)")
        return result.stdout.split(separator: "\n").compactMap { $0.split(whereSeparator: \.isWhitespace).first.map(String.init) }
    }

    /// The files mapped into process `pid` (from /proc/PID/maps, read to its end: the kernel
    /// reports the file's size as 0).
    static func mappedFiles(_ pid: pid_t) -> [String] {
        let data = FileHandle(forReadingAtPath: "/proc/\(pid)/maps")?.readDataToEndOfFile() ?? Data()
        return String(decoding: data, as: UTF8.self).split(separator: "\n").compactMap { line in
            line.split(separator: " ").dropFirst(5).first.map(String.init)
        }
    }

    static func executable(_ pid: pid_t) -> String? {
        try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/exe")
    }

    static func isEngineLibrary(_ name: String) -> Bool {
        ["libjavascriptcoregtk", "libglib-2.0", "libgobject-2.0", "libicuuc", "libicui18n"].contains { name.contains($0) }
    }

    @Test func theMacroBinaryLinksNoJavaScriptCore() throws {
        // What the check reads is real: macro-local names JavaScriptCore and the loader finds it.
        #expect(try Self.needed(Self.macroLocal).contains("libjavascriptcoregtk-4.1.so.0"))
        #expect(try Self.loaded(Self.macroLocal).contains("libjavascriptcoregtk-4.1.so.0"))
        let needed = try Self.needed(Self.macro)
        #expect(!needed.isEmpty)
        #expect(needed.filter(Self.isEngineLibrary) == [])
        #expect(try Self.loaded(Self.macro).filter(Self.isEngineLibrary) == [])
    }

    @Test func aDaemonCommandNeverMapsTheEngine() throws {
        let daemon = try DaemonProcess(files: ["bump.js": "function bump(channel, amount) { progress[channel] += amount; return progress[channel] }"])
        let watch = try BackgroundProcess("macro", ["progress", "--watch", "--json", "--socket", daemon.socket])
        #expect(try watch.nextLine() == #"{"inner":0,"middle":0,"outer":0}"#)
        // Still `macro` (no exec happened), with everything it loads mapped by now.
        let exe = try #require(Self.executable(watch.pid))
        #expect(exe == URL(fileURLWithPath: Self.macro).resolvingSymlinksInPath().path)
        let mapped = Self.mappedFiles(watch.pid)
        #expect(mapped.contains { $0.hasSuffix("/libc.so.6") })
        #expect(mapped.filter(Self.isEngineLibrary) == [])
        // And it still follows the daemon.
        _ = try daemon.client().call("macro.call", ["name": "bump", "args": ["inner", 2]])
        #expect(try watch.nextLine() == #"{"inner":2,"middle":0,"outer":0,"seq":1}"#)
    }

    @Test func runLocalAndCheckWorkThroughMacroLocal() throws {
        let dir = TemporaryDirectory()
        try dir.write("macros/bump.js", "function bump(channel, amount) {\n    progress[channel] += amount;\n    return progress[channel];\n}\n")
        try dir.write("macros/broken.js", "function broken() {\n  var x = ;\n}\n")
        let run = try BinaryRunner.macro("run", "--local", "bump", "outer", "2.5", "--json", "--macros", dir.url("macros"), "--state", dir.url("state.json"))
        #expect(run.status == 0, "\(run)")
        #expect(run.stdout == #"{"macro":"bump","result":2.5,"progress":{"inner":0,"middle":0,"outer":2.5}}"# + "\n")
        #expect(run.stderr == "")
        let again = try BinaryRunner.macro("run", "--local", "bump", "outer", "-1", "--macros", dir.url("macros"), "--state", dir.url("state.json"))
        #expect(again.stdout == "result: 1.5\ninner   0.00\nmiddle  0.00\nouter   1.50\n")
        let check = try BinaryRunner.macro("check", "--macros", dir.url("macros"))
        #expect(check.status == 1)
        #expect(check.stdout == "")
        #expect(check.stderr == "\(dir.url("macros"))/broken.js:2:11: error: SyntaxError: Unexpected token ';'\nchecked 2 files: 1 error\n")
        let file = try BinaryRunner.macro("check", dir.url("macros/bump.js"))
        #expect(file.status == 0)
        #expect(file.stderr == "checked 1 file: 0 errors\n")
    }

    @Test func theInProcessHalfReplacesMacroItIsNotAChild() throws {
        let dir = TemporaryDirectory()
        try dir.write("macros/spin.js", "function spin() {\n  console.log('spinning');\n  while (true) {}\n}\n")
        let spin = try BackgroundProcess(
            "macro", ["run", "--local", "spin", "--timeout-ms", "60000", "--macros", dir.url("macros"), "--state", dir.url("state.json")],
            readingStandardError: true)
        let local = URL(fileURLWithPath: Self.macroLocal).resolvingSymlinksInPath().path
        // The macro's console line (on stderr) says JavaScript runs: by then the same pid became
        // macro-local and mapped JavaScriptCore.
        #expect(try spin.nextLine() == "[spin] spinning")
        #expect(Self.executable(spin.pid) == local)
        #expect(Self.mappedFiles(spin.pid).contains { $0.contains("libjavascriptcoregtk") })
        // No child process: a signal to the pid the caller started reaches the engine itself.
        let children = (try? String(contentsOfFile: "/proc/\(spin.pid)/task/\(spin.pid)/children", encoding: .utf8)) ?? "unreadable"
        #expect(children == "")
        kill(spin.pid, SIGKILL)
        #expect(spin.waitForExit() == 128 + SIGKILL)
    }

    @Test func withoutMacroLocalTheInProcessCommandsSaySoAndDaemonCommandsStillWork() throws {
        let dir = TemporaryDirectory()
        let alone = dir.url("bin/macro")
        try FileManager.default.createDirectory(atPath: dir.url("bin"), withIntermediateDirectories: true)
        // Copied by cp: a file this process had open for writing could be inherited by a child
        // another test spawns meanwhile, and exec'ing it would fail with ETXTBSY.
        #expect(try BinaryRunner.run("/bin/cp", [Self.macro, alone]).status == 0)
        try dir.write("macros/echo.js", "function echo(x) { return x }")
        let missing = try BinaryRunner.run(alone, ["run", "--local", "echo", "1", "--macros", dir.url("macros"), "--state", dir.url("state.json")])
        #expect(missing.status == 70)
        #expect(missing.stdout == "")
        #expect(
            missing.stderr
                == "macro: \(dir.url("bin/macro-local")) is missing; `macro` runs macros in-process through macro-local, installed beside it (`make install-user` installs both)\n")
        let json = try BinaryRunner.run(alone, ["check", "--json", "--macros", dir.url("macros")])
        #expect(json.status == 70)
        #expect(try MacroValue(jsonText: json.stdout)["error"]["kind"] == "internal")
        #expect(try MacroValue(jsonText: json.stdout)["error"]["code"] == 70)

        // A command that talks to the daemon needs no macro-local at all.
        let daemon = try DaemonProcess(files: ["echo.js": "function echo(x) { return x }"])
        let remote = try BinaryRunner.run(alone, ["run", "echo", "[1,2]", "--json", "--socket", daemon.socket])
        #expect(remote.status == 0, "\(remote)")
        #expect(remote.stdout == #"{"macro":"echo","result":[1,2],"progress":{"inner":0,"middle":0,"outer":0}}"# + "\n")
        let help = try BinaryRunner.run(alone, ["--help"])
        #expect(help.status == 0)
        for command in ["run", "list", "show", "check", "status", "set", "progress", "logs", "edit", "types", "repl", "running", "cancel", "dashboard", "stats", "profile"] {
            #expect(help.stdout.contains("\n  \(command) "), "macro --help lacks \(command)")
        }
    }

    @Test func aSymlinkToMacroFindsTheRealMacroLocal() throws {
        let dir = TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: dir.url("bin"), withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: dir.url("bin/macro"), withDestinationPath: Self.macro)
        try dir.write("macros/echo.js", "function echo(x) { return x }")
        let result = try BinaryRunner.run(dir.url("bin/macro"), ["run", "echo", #""hi""#, "--local", "--macros", dir.url("macros"), "--state", dir.url("state.json")])
        #expect(result.status == 0, "\(result)")
        #expect(result.stdout == "result: \"hi\"\ninner   0.00\nmiddle  0.00\nouter   0.00\n")
    }
}
