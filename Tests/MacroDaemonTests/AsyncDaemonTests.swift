import Foundation
import MacroEngineCore
import MacroRPC
import MacroTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("macrod with async macros")
struct AsyncDaemonTests {
    static let files = [
        "climb.js": "async function(steps) { for (var i = 1; i <= steps; i++) { await sleep(20); progress.outer = i } return progress.outer }",
        "slow.js": "async function() { await sleep(400); return 'slow' }",
        "gate.js": "async function() { while (!globalThis.released) { await sleep(5) } return 'through' }",
        "release.js": "function() { globalThis.released = true; return 'released' }",
        "fast.js": "function() { return 'fast' }",
        "chatty.js": "function() { console.warn('careful', { n: 1 }); return 1 }",
    ]

    @Test func anAnimationIsPublishedStepByStepInOrder() throws {
        let daemon = try DaemonProcess(files: Self.files)
        let watcher = try daemon.client()
        _ = try watcher.call("subscribe", ["events": ["progress"]])
        let caller = try daemon.client()
        #expect(try caller.call("macro.call", ["name": "climb", "args": [5]]) == 5)
        let steps = try (1...5).map { _ in try watcher.waitFor("progress.changed") }
        #expect(steps.map { $0["outer"] } == [1, 2, 3, 4, 5])
        #expect(steps.map { $0["seq"] } == [1, 2, 3, 4, 5])
    }

    @Test func aFastCallAnswersWhileASlowOneAwaits() throws {
        let daemon = try DaemonProcess(files: Self.files)
        let slowClient = try daemon.client(), fastClient = try daemon.client()
        // `gate` awaits until `release` runs: if other calls had to wait for it, the calls
        // below could never answer (and the test would fail on the client's read timeout).
        try slowClient.send(raw: #"{"jsonrpc":"2.0","id":1,"method":"macro.call","params":{"name":"gate"}}"#)
        fastClient.setReceiveTimeout(seconds: 5)
        #expect(try fastClient.call("macro.call", ["name": "fast"]) == "fast")
        #expect(try fastClient.call("macro.call", ["name": "release"]) == "released")
        #expect(try slowClient.readMessage()?["result"] == "through")
    }

    @Test func theDeadlineCoversAwaitedTime() throws {
        let daemon = try DaemonProcess(files: Self.files)
        let client = try daemon.client()
        let error = try #require(throws: RPCError.self) { try client.call("macro.call", ["name": "slow", "timeoutMs": 100]) }
        #expect(error.code == -32001)
        #expect(error.message == "timed out after 100 ms")
        #expect(try client.call("macro.call", ["name": "fast"]) == "fast")
    }

    @Test func consoleReachesLogSubscribers() throws {
        let daemon = try DaemonProcess(files: Self.files)
        let client = try daemon.client()
        _ = try client.call("subscribe", ["events": ["log"]])
        #expect(try client.call("macro.call", ["name": "chatty"]) == 1)
        // The daemon's own records (e.g. "listening on ...") may come first under load.
        var log = try client.waitFor("log")
        while log["metadata"]["macro"] != "chatty" { log = try client.waitFor("log") }
        #expect(log["time"].stringValue?.count == 24)
        // With the id of the call that logged it (a number, as text like every metadata value).
        #expect(Int(log["metadata"]["call"].stringValue ?? "") != nil)
        #expect(log == ["time": log["time"], "level": "warning", "message": "careful { n: 1 }", "metadata": ["macro": "chatty", "call": log["metadata"]["call"]]])
    }

    @Test func editingALibFileReloadsIt() throws {
        let daemon = try DaemonProcess(files: ["lib/helpers.js": "function greet() { return 'hello' }", "hi.js": "function() { return greet() }"])
        let client = try daemon.client()
        _ = try client.call("subscribe", ["events": ["macros"]])
        #expect(try client.call("macro.call", ["name": "hi"]) == "hello")
        try daemon.dir.write("macros/lib/helpers.js", "function greet() { return 'bonjour' }")
        let loaded = try client.waitFor("macro.loaded")
        #expect(loaded == ["name": "lib/helpers", "version": 2])
        #expect(try client.call("macro.call", ["name": "hi"]) == "bonjour")
        try daemon.dir.write("macros/lib/helpers.js", "function greet() { return (")
        #expect(try client.waitFor("macro.failed")["name"] == "lib/helpers")
        #expect(try client.call("macro.call", ["name": "hi"]) == "bonjour")
    }

    @Test func theReplSaysWhyTheDaemonRefusesAndWorksWhenAllowed() throws {
        let closed = try DaemonProcess(files: Self.files)
        let refused = try BinaryRunner.run("macro", ["repl", "--socket", closed.socket], input: "1\n")
        #expect(refused.status == 77)
        #expect(refused.stderr.contains("does not allow engine.eval"))
        #expect(refused.stderr.contains("macro repl --local"))

        let open = try DaemonProcess(files: Self.files, config: "engine_eval: true\n")
        let result = try BinaryRunner.run("macro", ["repl", "--socket", open.socket], input: "fast()\n40 + 2\n")
        #expect(result.status == 0, "\(result)")
        #expect(result.stdout == "\"fast\"\n42\n")
    }

    @Test func theCLIWatchShowsTheDemoAnimationClimb() throws {
        let dir = TemporaryDirectory(prefix: "macrod")
        try FileManager.default.createDirectory(atPath: dir.url("macros/lib"), withIntermediateDirectories: true)
        for file in ["animate.js", "lib/rings.js"] {
            try dir.write("macros/\(file)", try String(contentsOfFile: repositoryRoot + "/macros/\(file)", encoding: .utf8))
        }
        let daemon = try DaemonProcess(dir: dir)
        let watch = try BackgroundProcess("macro", ["progress", "--watch", "--json", "--socket", daemon.socket])
        #expect(try watch.nextLine() == #"{"inner":0,"middle":0,"outer":0}"#)
        let run = try BinaryRunner.macro("run", "animate", "outer", "10", "--socket", daemon.socket)
        #expect(run.status == 0, "\(run)")
        var climbed: [Double] = []
        for _ in 1...10 {
            guard let line = try watch.nextLine() else { break }
            climbed.append(try MacroValue(jsonText: line)["outer"].doubleValue ?? -1)
        }
        #expect(climbed == [1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
    }
}
