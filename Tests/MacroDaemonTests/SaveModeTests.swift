import Foundation
import MacroEngineCore
import MacroRPC
import MacroTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `macro.save` writes files the way an editor would: an existing file keeps its mode, a new
/// one gets 0666 less the umask macrod started with.
@Suite("macrod macro.save file modes")
struct SaveModeTests {
    static func mode(_ path: String) -> mode_t? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return info.st_mode & 0o7777
    }

    @Test(arguments: [(mode_t(0o022), mode_t(0o644)), (0o027, 0o640), (0o002, 0o664), (0o077, 0o600)])
    func aNewFileFollowsTheUmask(_ umask: mode_t, _ expected: mode_t) throws {
        let daemon = try DaemonProcess(umask: umask)
        let client = try daemon.client()
        #expect(try client.call("macro.save", ["name": "fresh", "source": "function() { return 1 }"])["version"] == 1)
        #expect(Self.mode(daemon.macros + "/fresh.js") == expected)
        #expect(try client.call("macro.call", ["name": "fresh"]) == 1)
    }

    @Test func theUmaskSurvivesAnEngineRestart() throws {
        // An endless promise chain makes macrod re-execute itself; the
        // new process must still use the umask the first one was started with, not its own 077.
        let daemon = try DaemonProcess(
            files: ["runaway.js": "async function() { for (;;) await null; }"],
            config: "time_limit_ms: 300\nstall_grace_ms: 300\n", umask: 0o027)
        let client = try daemon.client()
        client.setReceiveTimeout(seconds: 30)
        let error = try #require(throws: RPCError.self) { try client.call("macro.call", ["name": "runaway"]) }
        #expect(error.code == -32001)
        #expect(error.message.hasSuffix("the engine was restarted"))
        #expect(try client.call("macro.save", ["name": "after", "source": "function() { return 1 }"])["version"] == 1)
        #expect(Self.mode(daemon.macros + "/after.js") == 0o640)
    }

    @Test func anExistingFileKeepsItsMode() throws {
        let daemon = try DaemonProcess(files: ["shared.js": "function() { return 1 }", "secret.js": "function() { return 1 }"], umask: 0o022)
        chmod(daemon.macros + "/shared.js", 0o664)
        chmod(daemon.macros + "/secret.js", 0o600)
        let client = try daemon.client()
        for name in ["shared", "secret"] {
            #expect(try client.call("macro.save", ["name": .string(name), "source": "function() { return 2 }"])["version"] == 2)
            #expect(try client.call("macro.call", ["name": .string(name)]) == 2)
        }
        #expect(Self.mode(daemon.macros + "/shared.js") == 0o664)
        #expect(Self.mode(daemon.macros + "/secret.js") == 0o600)
        #expect(try daemon.dir.read("macros/shared.js") == "function() { return 2 }")
        // No temporary file is left behind.
        #expect(try FileManager.default.contentsOfDirectory(atPath: daemon.macros).sorted() == ["secret.js", "shared.js"])
    }
}
