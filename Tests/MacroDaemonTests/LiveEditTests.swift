import Foundation
import MacroEngineCore
import MacroRPC
import MacroTestSupport
import Testing

/// Live reload with every way editors save, against a real macrod.
@Suite("macrod live editing")
struct LiveEditTests {
    func subscribed(_ daemon: DaemonProcess) throws -> RPCClient {
        let client = try daemon.client()
        #expect(try client.call("subscribe", ["events": ["macros", "progress"]]) == ["events": ["progress", "macros"]])
        return client
    }

    /// After a save, the next `macro.loaded` is for `name`; returns its version.
    func loaded(_ client: RPCClient, _ name: String) throws -> Int {
        let params = try client.waitFor("macro.loaded")
        #expect(params["name"] == .string(name))
        return try #require(params["version"].intValue)
    }

    @Test func everySavePatternIsPickedUp() throws {
        let daemon = try DaemonProcess(files: ["m.js": "function() { return 1 }"])
        let client = try subscribed(daemon)
        let path = daemon.macros + "/m.js"

        // Write in place.
        try Data("function() { return 2 }".utf8).write(to: URL(fileURLWithPath: path))
        #expect(try loaded(client, "m") == 2)
        #expect(try client.call("macro.call", ["name": "m"]) == 2)

        // Truncate, then write in two pieces with the file open (O_TRUNC), then close. Between
        // the pieces another file is saved: macrod handles the watcher's events in order, so
        // once that file is loaded, a reaction to the half-written m.js would have come first.
        let handle = try #require(FileHandle(forWritingAtPath: path))
        try handle.truncate(atOffset: 0)
        try handle.write(contentsOf: Data("function() { ".utf8))
        try Data("function() { return 'marker' }".utf8).write(to: URL(fileURLWithPath: daemon.macros + "/marker.js"))
        let marker = try #require(try client.nextNotification())
        #expect(marker["method"] == "macro.loaded" && marker["params"]["name"] == "marker", "\(marker)")
        try handle.write(contentsOf: Data("return 3 }".utf8))
        try handle.close()
        #expect(try loaded(client, "m") == 3)
        #expect(try client.call("macro.call", ["name": "m"]) == 3)

        // Write a temporary file, then rename it over (vim, VS Code, sed -i).
        let temporary = daemon.macros + "/.m.js.swp"
        try Data("function() { return 4 }".utf8).write(to: URL(fileURLWithPath: temporary))
        #expect(rename(temporary, path) == 0)
        #expect(try loaded(client, "m") == 4)
        #expect(try client.call("macro.call", ["name": "m"]) == 4)

        // Delete, then create.
        try FileManager.default.removeItem(atPath: path)
        try Data("function() { return 5 }".utf8).write(to: URL(fileURLWithPath: path))
        var note = try #require(try client.nextNotification())
        if note["method"] == "macro.removed" { note = try #require(try client.nextNotification()) }
        #expect(note["method"] == "macro.loaded")
        #expect(try client.call("macro.call", ["name": "m"]) == 5)

        // One save gives one reload: a file saved after it is the next thing loaded (the
        // watcher's events are handled in order, so a second reload of m would come first), and
        // then the next notification is our own change.
        try Data("function() { return 6 }".utf8).write(to: URL(fileURLWithPath: path + ".tmp"))
        #expect(rename(path + ".tmp", path) == 0)
        _ = try loaded(client, "m")
        try Data("function() { return 'after' }".utf8).write(to: URL(fileURLWithPath: daemon.macros + "/after.js"))
        let after = try #require(try client.nextNotification())
        #expect(after["method"] == "macro.loaded" && after["params"]["name"] == "after", "\(after)")
        _ = try client.call("progress.set", ["inner": 1])
        #expect(try client.nextNotification()?["method"] == "progress.changed")
    }

    @Test func aBrokenSaveKeepsTheOldVersionAndAFixRestoresIt() throws {
        let daemon = try DaemonProcess(files: ["m.js": "function() { return 'good' }"])
        let client = try subscribed(daemon)
        let path = daemon.macros + "/m.js"
        try Data("function() {\n  return 'bad' +;\n}".utf8).write(to: URL(fileURLWithPath: path))
        let failed = try client.waitFor("macro.failed")
        #expect(failed == ["name": "m", "file": .string(path), "line": 2, "column": 17, "message": "SyntaxError: Unexpected token ';'"])
        #expect(try client.call("macro.call", ["name": "m"]) == "good")
        let entry = try #require(try client.call("macro.list").arrayValue?.first)
        #expect(entry["status"] == "error")
        #expect(entry["version"] == 1)
        #expect(entry["error"] == ["message": "SyntaxError: Unexpected token ';'", "line": 2, "column": 17])
        // `macro run` of a broken file quietly ran the previous version.
        let run = try BinaryRunner.macro("run", "m", "--socket", daemon.socket)
        #expect(run.status == 0, "\(run)")
        #expect(run.stderr == "[m] warning: \(path):2:17: SyntaxError: Unexpected token ';'; the file does not load, so version 1, the last that did, runs\n", "\(run)")
        // One broken save wrote two log records (the library's and the engine's).
        let records = try #require(try client.call("log.recent").arrayValue)
        #expect(records.filter { $0["message"].stringValue?.contains("Unexpected token ';'") == true }.count == 1, "\(records)")

        try Data("function() { return 'fixed' }".utf8).write(to: URL(fileURLWithPath: path))
        #expect(try loaded(client, "m") == 2)
        #expect(try client.call("macro.call", ["name": "m"]) == "fixed")
        #expect(try client.call("macro.list").arrayValue?.first?["status"] == "ok")
    }

    @Test func deletingAFileRemovesTheMacro() throws {
        let daemon = try DaemonProcess(files: ["m.js": "function() { return 1 }", "keep.js": "function() { return 'k' }"])
        let client = try subscribed(daemon)
        try FileManager.default.removeItem(atPath: daemon.macros + "/m.js")
        #expect(try client.waitFor("macro.removed") == ["name": "m"])
        let error = try #require(throws: RPCError.self) { try client.call("macro.call", ["name": "m"]) }
        #expect(error.code == -32002)
        #expect(try client.call("macro.call", ["name": "keep"]) == "k")
    }

    @Test func theDirectoryCanBeDeletedRecreatedOrReplaced() throws {
        let daemon = try DaemonProcess(files: ["m.js": "function() { return 1 }"])
        let client = try subscribed(daemon)
        try FileManager.default.removeItem(atPath: daemon.macros)
        #expect(try client.waitFor("macro.removed") == ["name": "m"])
        #expect(try client.call("macro.list") == [])

        try FileManager.default.createDirectory(atPath: daemon.macros, withIntermediateDirectories: false)
        try Data("function() { return 2 }".utf8).write(to: URL(fileURLWithPath: daemon.macros + "/m.js"))
        #expect(try client.waitFor("macro.loaded")["name"] == "m")
        #expect(try client.call("macro.call", ["name": "m"]) == 2)

        // Replaced by a rename: a new directory moved over the old one.
        let staging = daemon.dir.url("staging")
        try FileManager.default.createDirectory(atPath: staging, withIntermediateDirectories: false)
        try Data("function() { return 3 }".utf8).write(to: URL(fileURLWithPath: staging + "/m.js"))
        try FileManager.default.removeItem(atPath: daemon.macros)
        #expect(rename(staging, daemon.macros) == 0)
        // The rescan loads the new m.js (a macro.removed may come first, if it ran between the
        // delete and the rename; the same content again is not loaded, nor told).
        _ = try client.waitFor("macro.loaded") { $0["name"] == "m" }
        #expect(try client.call("macro.call", ["name": "m"]) == 3)
        // And it keeps watching the new directory.
        try Data("function() { return 4 }".utf8).write(to: URL(fileURLWithPath: daemon.macros + "/m.js"))
        _ = try client.waitFor("macro.loaded") { $0["name"] == "m" }
        #expect(try client.call("macro.call", ["name": "m"]) == 4)
    }

    @Test func saveAndDeleteOverTheSocket() throws {
        let daemon = try DaemonProcess(files: ["m.js": "function() { return 1 }"])
        let client = try subscribed(daemon)
        let saved = try client.call("macro.save", ["name": "fresh", "source": "function(x) { return x * 3 }"])
        #expect(saved == ["name": "fresh", "file": .string(daemon.macros + "/fresh.js"), "version": 1])
        #expect(try client.call("macro.call", ["name": "fresh", "args": [5]]) == 15)
        #expect(try String(contentsOfFile: daemon.macros + "/fresh.js", encoding: .utf8) == "function(x) { return x * 3 }")

        // A syntax error is refused with its position, and the file is left untouched.
        let refused = try #require(throws: RPCError.self) {
            try client.call("macro.save", ["name": "fresh", "source": "function(x) {\n  return x *;\n}"])
        }
        #expect(refused.code == -32003)
        #expect(refused.data?["line"] == 2)
        #expect(refused.data?["column"] == 13)
        #expect(try String(contentsOfFile: daemon.macros + "/fresh.js", encoding: .utf8) == "function(x) { return x * 3 }")

        // Names are validated: nothing is written outside the directory.
        for name in ["../x", "a/b", "", "Math", "progress"] {
            let error = try #require(throws: RPCError.self) { try client.call("macro.save", ["name": .string(name), "source": "function() {}"]) }
            #expect([-32602, -32003].contains(error.code), "\(name)")
        }
        #expect(!FileManager.default.fileExists(atPath: daemon.dir.url("x.js")))
        #expect(try FileManager.default.contentsOfDirectory(atPath: daemon.macros).sorted() == ["fresh.js", "m.js"])

        #expect(try client.call("macro.delete", ["name": "fresh"]) == ["name": "fresh"])
        #expect(!FileManager.default.fileExists(atPath: daemon.macros + "/fresh.js"))
        #expect(try client.call("macro.list").arrayValue?.map { $0["name"] } == ["m"])
        let missing = try #require(throws: RPCError.self) { try client.call("macro.delete", ["name": "fresh"]) }
        #expect(missing.code == -32002)
    }

    /// `macro.check` judges a text as `macro.save` would, and writes, loads and tells nothing.
    @Test func checkJudgesATextWithoutSavingOrLoadingIt() throws {
        let daemon = try DaemonProcess(files: ["m.js": "function m() { return 1 }\n"])
        let client = try subscribed(daemon)
        #expect(try client.call("macro.check", ["name": "m", "source": "function m() { return 2 }"]) == ["name": "m", "ok": true])
        #expect(try client.call("macro.check", ["name": "fresh", "source": "function fresh() {}"]) == ["name": "fresh", "ok": true])
        let refused = try #require(throws: RPCError.self) {
            try client.call("macro.check", ["name": "m", "source": "function m() {\n  return 1 *;\n}"])
        }
        #expect(refused.code == -32003)
        #expect(refused.message == "SyntaxError: Unexpected token ';'")
        #expect(refused.data?["file"] == .string(daemon.macros + "/m.js"))
        #expect(refused.data?["line"] == 2)
        #expect(refused.data?["column"] == 13)
        let notAFunction = try #require(throws: RPCError.self) { try client.call("macro.check", ["name": "m", "source": "42"]) }
        #expect(notAFunction.code == -32003)
        // A verdict is the check's answer, not a failed request: `macro status` counts no error.
        #expect(try client.call("engine.status")["errors"] == 0)
        for name in ["../x", "Math"] {
            let error = try #require(throws: RPCError.self) { try client.call("macro.check", ["name": .string(name), "source": "function() {}"]) }
            #expect([-32602, -32003].contains(error.code), "\(name)")
        }
        // Nothing changed: the file, the list, the live version; no notification was sent.
        #expect(try String(contentsOfFile: daemon.macros + "/m.js", encoding: .utf8) == "function m() { return 1 }\n")
        #expect(try FileManager.default.contentsOfDirectory(atPath: daemon.macros) == ["m.js"])
        #expect(try client.call("macro.list").arrayValue?.map { [$0["name"], $0["status"], $0["version"]] } == [["m", "ok", 1]])
        #expect(try client.call("macro.call", ["name": "m"]) == 1)
        #expect(client.pendingNotifications.isEmpty, "\(client.pendingNotifications)")
    }
}
