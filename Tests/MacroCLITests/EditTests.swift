import Foundation
import MacroEngineCore
import MacroTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `macro edit` with a real terminal editor: vim in a tmux pane (a real pty, the terminal's
/// foreground process group), and with scripted editors for the failure cases.
@Suite("macro edit", .serialized)
struct EditTests {
    /// A private tmux server running one command in a 100x30 pane.
    final class Pane {
        let socket: String
        let dir: TemporaryDirectory
        /// Where tmux appends everything the pane prints (`pipe-pane`): each write there says the
        /// screen may have changed.
        private let output = TemporaryDirectory(prefix: "tmux-pane")
        private let printed: DirectoryEvents

        init(dir: TemporaryDirectory, command: String) throws {
            self.dir = dir
            socket = dir.url("tmux.sock")
            printed = try DirectoryEvents(output.path)
            // Not through Foundation's Process: the daemonized tmux server would keep the
            // descriptor Process watches for the child's end, and the wait would never return.
            let status = try Self.spawnDetached([try tool("tmux"), "-S", socket, "-f", "/dev/null", "new-session", "-d", "-x", "100", "-y", "30", command])
            guard status == 0 else { throw ToolMissing(description: "tmux did not start: exit \(status)") }
            // tmux writes the pane's output to the pipe after it has drawn it, so the screen
            // shows at least what the file was told. (What came before it is on the screen already.)
            let piped = try Self.spawnDetached([try tool("tmux"), "-S", socket, "pipe-pane", "-o", "cat >> '\(output.url("pane.out"))'"])
            guard piped == 0 else { throw ToolMissing(description: "tmux pipe-pane failed: exit \(piped)") }
        }

        /// Runs `arguments` with stdio on /dev/null and no other descriptor of ours; its exit status.
        static func spawnDetached(_ arguments: [String]) throws -> Int32 {
            var actions = posix_spawn_file_actions_t()
            posix_spawn_file_actions_init(&actions)
            defer { posix_spawn_file_actions_destroy(&actions) }
            for fd in Int32(0)...2 { posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY, 0) }
            // The shell closes every other descriptor it inherited (from other tests' processes), then runs the command.
            let closeAll = #"for fd in /proc/$$/fd/*; do n=${fd##*/}; [ "$n" -gt 2 ] && eval "exec $n>&-"; done; exec "$@""#
            let argv = (["/bin/bash", "-c", closeAll, "bash"] + arguments).map { strdup($0) } + [nil]
            defer { argv.forEach { free($0) } }
            // Nothing blocked or ignored: the test runner blocks SIGTERM, and a tmux server that
            // inherited that never ends (kill-server is tmux sending itself SIGTERM).
            var attributes = posix_spawnattr_t()
            posix_spawnattr_init(&attributes)
            defer { posix_spawnattr_destroy(&attributes) }
            var empty = sigset_t(), defaults = sigset_t()
            sigemptyset(&empty)
            sigfillset(&defaults)
            posix_spawnattr_setsigmask(&attributes, &empty)
            posix_spawnattr_setsigdefault(&attributes, &defaults)
            posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
            var pid: pid_t = 0
            let spawned = posix_spawn(&pid, "/bin/bash", &actions, &attributes, argv, environ)
            guard spawned == 0 else { throw ToolMissing(description: "cannot start \(arguments[0]): \(String(cString: strerror(spawned)))") }
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 {
                guard errno == EINTR else { return -1 }
            }
            return (status >> 8) & 0xff
        }

        deinit { _ = try? Self.spawnDetached([try tool("tmux"), "-S", socket, "kill-server"]) }

        func keys(_ keys: String...) throws {
            _ = try BinaryRunner.run(try tool("tmux"), ["-S", socket, "send-keys"] + keys)
        }

        /// The pane's text from the start of its history: what scrolled off the 30 rows counts too.
        func screen() throws -> String {
            try BinaryRunner.run(try tool("tmux"), ["-S", socket, "capture-pane", "-p", "-S", "-"]).stdout
        }

        /// Looks at the screen now and each time the pane prints, until `condition` holds (60 s
        /// at most: the whole suite runs in parallel on two cores, where one terminal test took
        /// 84 s in a passing CI run).
        func waitForScreen(_ what: String, _ condition: (String) -> Bool) throws -> String {
            var last = ""
            let shown = try printed.until(timeout: .seconds(60)) { () throws -> String? in
                last = try screen()
                return condition(last) ? last : nil
            }
            guard let shown else { throw ToolMissing(description: "timed out waiting for \(what); the screen:\n\(last)") }
            return shown
        }

        /// Waits for a file to hold a whole line (each change in its directory is looked at, 60 s
        /// at most) and returns its text.
        func waitForFile(_ path: String) throws -> String {
            let changes = try DirectoryEvents((path as NSString).deletingLastPathComponent)
            guard let text = changes.file(path, timeout: .seconds(60), where: { $0.hasSuffix("\n") }) else {
                throw ToolMissing(description: "timed out waiting for \(path); the screen:\n\(try screen())")
            }
            return text
        }
    }

    struct ToolMissing: Error, CustomStringConvertible { var description: String }

    static func tool(_ name: String) throws -> String {
        let paths = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin").split(separator: ":").map { "\($0)/\(name)" }
        guard let found = paths.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw ToolMissing(description: "\(name) not found in PATH: `make test` installs it")
        }
        return found
    }

    /// The shell command for the pane: `macro edit ARGS` with vim (no user config), its exit
    /// status written to `status` when it ends.
    static func editCommand(_ dir: TemporaryDirectory, _ arguments: String, socket: String? = nil) throws -> String {
        let macro = BinaryRunner.binDirectory + "/macro"
        let env = "EDITOR='\(try tool("vim")) -u NONE -N -i NONE' XDG_CONFIG_HOME='\(dir.url("xdg"))' MACROENGINE_SOCKET='\(socket ?? dir.url("none.sock"))'"
        return "env \(env) \(macro) edit \(arguments) 2>'\(dir.url("stderr"))'; echo $? > '\(dir.url("status"))'; sleep 600"
    }

    @Test func vimInATmuxPaneEditsANewMacroThatThenLoadsInProcess() throws {
        let dir = TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: dir.url("macros"), withIntermediateDirectories: true)
        let pane = try Pane(dir: dir, command: try Self.editCommand(dir, "fresh --macros '\(dir.url("macros"))'"))
        // vim shows the template (not stopped by SIGTTOU: it is in the foreground group).
        _ = try pane.waitForScreen("vim showing the template") { $0.contains("function fresh() {") }
        // (No ';' in keys: tmux reads a trailing one as its command separator.)
        try pane.keys("2G", "o", "return 42", "Escape", ":wq", "Enter")
        #expect(try pane.waitForFile(dir.url("status")) == "0\n")
        #expect(try dir.read("macros/fresh.js") == "// fresh: describe what it does.\nfunction fresh() {\nreturn 42\n    \n}\n")
        #expect(try pane.screen().contains("fresh is valid"))
        #expect(try dir.read("stderr") == "")
        let run = try BinaryRunner.macro("run", "fresh", "--macros", dir.url("macros"), "--state", dir.url("state.json"), "--json")
        #expect(try MacroValue(jsonText: run.stdout)["result"] == 42)
    }

    @Test func quittingVimWithoutSavingLeavesNoMacroWithADaemonRunning() throws {
        let daemon = try DaemonProcess(files: ["keep.js": "function keep() { return 1 }"])
        let client = try daemon.client()
        _ = try client.call("subscribe", ["events": ["macros"]])
        let dir = TemporaryDirectory()
        let pane = try Pane(dir: dir, command: try Self.editCommand(dir, "ghost", socket: daemon.socket))
        _ = try pane.waitForScreen("vim showing the template") { $0.contains("function ghost() {") }
        try pane.keys(":q!", "Enter")
        #expect(try pane.waitForFile(dir.url("status")) == "0\n")
        #expect(try pane.screen().contains("ghost: nothing saved, no macro created"))
        #expect(!FileManager.default.fileExists(atPath: daemon.macros + "/ghost.js"))
        let names = try client.call("macro.list").arrayValue?.compactMap(\.["name"].stringValue)
        #expect(names == ["keep"])
        #expect(client.pendingNotifications.isEmpty, "the daemon saw no file: \(client.pendingNotifications)")
    }

    @Test func vimSavingABrokenFileExits65WithTheDaemonAsWithout() throws {
        let daemon = try DaemonProcess(files: ["keep.js": "function keep() { return 1 }"])
        let dir = TemporaryDirectory()
        let pane = try Pane(dir: dir, command: try Self.editCommand(dir, "keep", socket: daemon.socket))
        _ = try pane.waitForScreen("vim showing keep.js") { $0.contains("function keep()") }
        try pane.keys("A", " +", "Escape", ":wq", "Enter")
        #expect(try pane.waitForFile(dir.url("status")) == "65\n")
        #expect(try dir.read("stderr").hasPrefix("\(daemon.macros)/keep.js:1:"))

        // The same broken save without a daemon: the same exit code.
        let local = TemporaryDirectory()
        try local.write("macros/keep.js", "function keep() { return 1 }\n")
        let editor = try local.write("editor.sh", "#!/bin/sh\nprintf 'function keep() { return 1 } +\\n' > \"$1\"\n")
        chmod(editor, 0o755)
        let result = try BinaryRunner.macro("edit", "keep", "--macros", local.url("macros"), environment: ["EDITOR": editor])
        #expect(result.status == 65, "\(result)")
        #expect(result.stderr.hasPrefix("\(local.url("macros"))/keep.js:1:"))
    }

    static let bumpGood = "function bump(c, n) {\n    progress[c] += (n === undefined ? 1 : n)\n    return progress[c]\n}\n"
    static let bumpBroken = "function bump(c, n) {\n    progress[c] += (n === undefined ? 1 : n)\n    return progress[c] +\n}\n"

    /// The fix after a broken save was reported as still broken (exit 65 with the old
    /// error), because the wait read the daemon's entry before it had reloaded the file. The
    /// verdict is now about the text saved: `macro.check` of it, then the load waited for.
    @Test func aFixAfterABrokenSaveIsReportedLoadedNotTheOldError() throws {
        let daemon = try DaemonProcess(files: ["bump.js": Self.bumpGood])
        let dir = TemporaryDirectory()
        let breaking = try dir.write("break.sh", "#!/bin/sh\nprintf '%s' '\(Self.bumpBroken)' > \"$1\"\n")
        let fixing = try dir.write("fix.sh", "#!/bin/sh\nprintf '%s' '\(Self.bumpGood)' > \"$1\"\n")
        chmod(breaking, 0o755)
        chmod(fixing, 0o755)
        for round in 1...3 {
            let broken = try BinaryRunner.macro("edit", "bump", "--socket", daemon.socket, environment: ["EDITOR": breaking])
            #expect(broken.status == 65, "round \(round): \(broken)")
            #expect(broken.stdout == "")
            #expect(broken.stderr == "\(daemon.macros)/bump.js:4:1: error: SyntaxError: Unexpected token '}'\nthe previous version stays live until the file loads\n")
            let fixed = try BinaryRunner.macro("edit", "bump", "--socket", daemon.socket, environment: ["EDITOR": fixing])
            #expect(fixed.status == 0, "round \(round): \(fixed)")
            #expect(fixed.stdout == "bump loaded (version \(round + 1))\n")
            #expect(fixed.stderr == "")
            let entry = try daemon.client().call("macro.list").arrayValue?.first { $0["name"] == "bump" }
            #expect(entry?["status"] == "ok")
            #expect(entry?["version"] == .number(Double(round + 1)))
        }
    }

    /// The same with vim in a real terminal: break the file in one `macro edit`, fix it in the next.
    @Test func vimBreaksThenFixesAMacroAndTheSecondEditSaysLoaded() throws {
        let daemon = try DaemonProcess(files: ["bump.js": Self.bumpGood])
        let first = TemporaryDirectory()
        let breaking = try Pane(dir: first, command: try Self.editCommand(first, "bump", socket: daemon.socket))
        _ = try breaking.waitForScreen("vim showing bump.js") { $0.contains("function bump(c, n)") }
        try breaking.keys("3G", "A", " +", "Escape", ":wq", "Enter")
        #expect(try breaking.waitForFile(first.url("status")) == "65\n")
        #expect(try first.read("stderr") == "\(daemon.macros)/bump.js:4:1: error: SyntaxError: Unexpected token '}'\nthe previous version stays live until the file loads\n")
        #expect(try String(contentsOfFile: daemon.macros + "/bump.js", encoding: .utf8) == Self.bumpBroken)

        let second = TemporaryDirectory()
        let fixing = try Pane(dir: second, command: try Self.editCommand(second, "bump", socket: daemon.socket))
        _ = try fixing.waitForScreen("vim showing the broken bump.js") { $0.contains("return progress[c] +") }
        try fixing.keys("3G", "$", "x", "x", ":wq", "Enter")
        #expect(try fixing.waitForFile(second.url("status")) == "0\n")
        #expect(try second.read("stderr") == "")
        #expect(try fixing.screen().contains("bump loaded (version 2)"))
        #expect(try String(contentsOfFile: daemon.macros + "/bump.js", encoding: .utf8) == Self.bumpGood)
    }

    @Test func theEditorInheritsNoSocketAndItsFailureExits71() throws {
        let daemon = try DaemonProcess(files: ["keep.js": "function keep() { return 1 }"])
        let dir = TemporaryDirectory()
        // The editor lists its open descriptors, then fails.
        let editor = try dir.write("editor.sh", "#!/bin/sh\nls -l /proc/$$/fd > '\(dir.url("fds"))'\nexit 3\n")
        chmod(editor, 0o755)
        let result = try BinaryRunner.macro("edit", "newone", "--socket", daemon.socket, environment: ["EDITOR": editor])
        #expect(result.status == 71, "\(result)")
        #expect(result.stderr == "macro: the editor '\(editor)' exited with status 3; no macro was created\n")
        #expect(!(try dir.read("fds")).contains("socket:"))
        #expect(!FileManager.default.fileExists(atPath: daemon.macros + "/newone.js"))

        let missing = try BinaryRunner.macro("edit", "newone", "--socket", daemon.socket, "--json", environment: ["EDITOR": "/nonexistent/editor"])
        #expect(missing.status == 71)
        #expect(try MacroValue(jsonText: missing.stdout)["error"]["kind"] == "editor")
        #expect(try MacroValue(jsonText: missing.stdout)["error"]["code"] == 71)
    }

    @Test func aNameThatCouldNeverLoadIsRefusedBeforeAnyFileIsMade() throws {
        let dir = TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: dir.url("macros"), withIntermediateDirectories: true)
        for name in ["Math", "progress", "setInnerProgress", "JSON", "sleep", "console"] {
            let result = try BinaryRunner.macro("edit", name, "--macros", dir.url("macros"), environment: ["EDITOR": "false"])
            #expect(result.status == 64, "\(name): \(result)")
            #expect(result.stderr == "macro: '\(name)' is an engine global; a macro with that name could never load. Choose another name\n")
        }
        let keyword = try BinaryRunner.macro("edit", "class", "--macros", dir.url("macros"), environment: ["EDITOR": "false"])
        #expect(keyword.status == 64)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.url("macros")) == [])
    }
}
