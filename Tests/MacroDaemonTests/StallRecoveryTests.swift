import Foundation
import MacroEngineCore
import MacroRPC
import MacroTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// JavaScript that JavaScriptCore cannot interrupt (endless chains of
/// promise jobs) is stopped by macrod's last resort, which restarts the engine under the clients'
/// feet: the stuck call fails, everything else goes on, nothing answered is lost.
@Suite("macrod recovers from a stalled engine", .serialized)
struct StallRecoveryTests {
    static let config = "time_limit_ms: 300\nstall_grace_ms: 300\n"
    static let files = [
        "bump.js": "function(channel, amount) { progress[channel] += amount; return progress[channel] }",
        "slow.js": "async function() { var t = Date.now(); while (Date.now() - t < 200) {} await sleep(1); return 'ok' }",
    ]

    /// Every shape of endless promise-job chain we know, each as a macro.
    static let runaways = [
        "async function() { progress.inner = 9; for (;;) await null; }",
        "function() { progress.inner = 9; function f() { Promise.resolve().then(f) } f(); return 1 }",
        "async function() { progress.inner = 9; async function* g() { for (;;) yield 1 } for await (const x of g()) {} }",
        "function() { progress.inner = 9; function f() { queueMicrotask(f) } f(); return new Promise(function () {}) }",
        "function() { setTimeout(function () { progress.inner = 9; function f() { Promise.resolve().then(f) } f() }, 0); return new Promise(function () {}) }",
    ]

    /// A daemon whose engine is stuck in an await loop (call 1 of `caller`): `before` runs once
    /// the daemon answers, before the loop starts. Returns once the loop runs (or, on a loaded
    /// machine, once its restart has begun).
    static func stuckInAnAwaitLoop(config: String, before: (DaemonProcess) throws -> Void = { _ in }) throws -> (DaemonProcess, RPCClient) {
        var files = Self.files
        files["loop.js"] = "async function() { for (;;) await null; }"
        let daemon = try DaemonProcess(files: files, config: config)
        try before(daemon)
        let caller = try daemon.client()
        try caller.send(raw: #"{"jsonrpc":"2.0","id":1,"method":"macro.call","params":{"name":"loop"}}"#)
        let control = try daemon.client()
        _ = eventually(timeout: .seconds(2)) { () -> Bool? in
            guard let running = try? control.call("macro.running").arrayValue, running.isEmpty else { return true }
            return nil
        }
        return (daemon, caller)
    }

    func reply(_ client: RPCClient, id: Int) throws -> MacroValue {
        client.setReceiveTimeout(seconds: 30)
        while let message = try client.readMessage() {
            if message["id"].intValue == id { return message }
        }
        throw RPCError(code: -1, message: "connection closed before reply \(id)")
    }

    /// A macro's count in its store survives the stall restart (a re-exec that saves
    /// nothing: the new process reads the journal), and the stuck turn's own store write is gone.
    @Test func aStoreSurvivesTheStallRestart() throws {
        var files = Self.files
        files["counter.js"] = #"function counter() { const n = (store.get("count") ?? 0) + 1; store.set("count", n); return n }"#
        files["stuck.js"] = #"async function stuck() { store.set("mark", "stuck"); for (;;) await null; }"#
        let daemon = try DaemonProcess(files: files, config: Self.config)
        let client = try daemon.client()
        for expected in 1...3 { #expect(try client.call("macro.call", ["name": "counter"]) == .number(Double(expected))) }
        let caller = try daemon.client()
        try caller.send(raw: #"{"jsonrpc":"2.0","id":7,"method":"macro.call","params":{"name":"stuck"}}"#)
        #expect(try reply(caller, id: 7)["error"]["code"] == .number(Double(RPCError.timeout)))
        #expect(try caller.call("macro.call", ["name": "counter"]) == 4, "log:\n\(daemon.log)")
        #expect(daemon.log.contains("serving again"))
        #expect(try caller.call("store.get", ["name": "stuck"])["entries"] == [:])
        // The run records came along, the stuck run's as a failure.
        let runs = try caller.call("run.list").arrayValue ?? []
        #expect(runs.map { $0["macro"] } == ["counter", "counter", "counter", "stuck", "counter"], "\(runs)")
        #expect(runs.map { $0["ok"] } == [true, true, true, false, true])
        #expect(runs.map { $0["id"] } == [1, 2, 3, 4, 5])
    }

    /// An engine restart re-executes macrod in the same process: the uptime `engine.status`
    /// reports (the dashboard's) is macrod's since it started, not the new process image's.
    @Test func theUptimeGoesOnAcrossTheStallRestart() throws {
        var files = Self.files
        files["stuck.js"] = "async function stuck() { for (;;) await null; }"
        let daemon = try DaemonProcess(files: files, config: Self.config)
        let pid = daemon.pid
        let client = try daemon.client()
        let before = try #require(try client.call("engine.status")["uptime"].doubleValue)
        // Taken after that answer: macrod's uptime grows at least this much until the next read.
        let read = ContinuousClock.now
        try client.send(raw: #"{"jsonrpc":"2.0","id":7,"method":"macro.call","params":{"name":"stuck"}}"#)
        #expect(try reply(client, id: 7)["error"]["code"] == .number(Double(RPCError.timeout)))
        // The engine is stuck until the exec: the new process answers this.
        let elapsed = ContinuousClock.now - read
        let after = try #require(try client.call("engine.status")["uptime"].doubleValue)
        #expect(daemon.log.contains("serving again"), "\(daemon.log)")
        #expect(daemon.pid == pid)
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        // The uptime is rounded to the millisecond.
        #expect(after >= before + seconds - 0.001, "uptime \(before) s, then \(after) s after the restart, \(seconds) s later")
    }

    @Test(arguments: runaways)
    func anEndlessPromiseChainIsStoppedAndEverythingElseGoesOn(_ source: String) throws {
        var files = Self.files
        files["runaway.js"] = source
        let daemon = try DaemonProcess(files: files, config: Self.config)
        let pid = daemon.pid
        let other = try daemon.client()
        #expect(try other.call("macro.call", ["name": "bump", "args": ["outer", 2]]) == 2)
        let subscriber = try daemon.client()
        _ = try subscriber.call("subscribe", ["events": ["progress"]])

        let caller = try daemon.client()
        try caller.send(raw: #"{"jsonrpc":"2.0","id":7,"method":"macro.call","params":{"name":"runaway"}}"#)
        let answer = try reply(caller, id: 7)
        #expect(answer["error"]["code"] == .number(Double(RPCError.timeout)), "\(answer)")
        #expect(answer["error"]["data"]["reason"] == "timeout")

        // The same process (re-executed), serving again: a 200 ms macro runs normally, the
        // connections opened before are still open, and the stuck turn's write is gone.
        #expect(daemon.isRunning && daemon.pid == pid)
        let slow = Result { try caller.call("macro.call", ["name": "slow"]) }
        #expect((try? slow.get()) == "ok", "\(slow) log:\n\(daemon.log)")
        #expect(try other.call("progress.get") == ["inner": 0, "middle": 0, "outer": 2])
        #expect(try other.call("macro.call", ["name": "bump", "args": ["outer", 1]]) == 3)
        let change = try subscriber.waitFor("progress.changed")
        #expect(change["outer"] == 3)
        #expect(daemon.log.contains("serving again"))
    }

    /// A JSON-RPC batch one of whose elements stalls the engine is answered whole, in both
    /// `io_thread` modes: the elements before it with their real results (each element runs as an
    /// engine batch of its own, so a save that wrote its file is not "nothing was kept"), the stuck
    /// one with its stop, the one after it -32006 (it had not started; send it again). Before, a
    /// finished element could be handed over alone and the array never came, and with the
    /// connections on the engine's thread the restart wrote the stuck element's reply alone.
    @Test(arguments: ["engine", "separate"])
    func aBatchWithAStallingElementIsAnsweredWhole(ioThread: String) throws {
        var files = Self.files
        files["runaway.js"] = "function() { function f() { Promise.resolve().then(f) } f(); return 1 }"
        let daemon = try DaemonProcess(files: files, config: Self.config + "io_thread: \(ioThread)\n")
        let caller = try daemon.client()
        try caller.send(
            raw: #"[{"jsonrpc":"2.0","id":1,"method":"macro.save","params":{"name":"kept","source":"function() { return 5 }"}},"#
                + #"{"jsonrpc":"2.0","id":2,"method":"subscribe","params":{"events":["progress"]}},"#
                + #"{"jsonrpc":"2.0","id":3,"method":"macro.call","params":{"name":"runaway"}},"#
                + #"{"jsonrpc":"2.0","method":"progress.get"},"#
                + #"{"jsonrpc":"2.0","id":4,"method":"macro.call","params":{"name":"bump","args":["inner",1]}}]"#)
        caller.setReceiveTimeout(seconds: 30)
        let message = try caller.readMessage()
        let replies = try #require(message?.arrayValue, "not the batch's reply: \(String(describing: message))\n\(daemon.log)")
        #expect(replies.map { $0["id"] } == [1, 2, 3, 4])
        #expect(replies[0]["result"]["name"] == "kept", "\(replies[0])")
        #expect(replies[1]["result"] == ["events": ["progress"]], "\(replies[1])")
        #expect(replies[2]["error"]["code"] == .number(Double(RPCError.timeout)), "\(replies[2])")
        #expect(replies[3]["error"]["code"] == .number(Double(RPCError.engineRestarted)), "\(replies[3])")
        #expect(try caller.call("macro.call", ["name": "kept"]) == 5)
        #expect(try caller.call("progress.get") == ["inner": 0, "middle": 0, "outer": 0], "the element that had not started did not run")
    }

    @Test func withTheConnectionsOnTheEngineThreadTheRestartStillAnswers() throws {
        var files = Self.files
        files["loop.js"] = "async function() { for (;;) await null; }"
        let daemon = try DaemonProcess(files: files, config: Self.config + "io_thread: engine\n")
        let caller = try daemon.client()
        let other = try daemon.client()
        #expect(try other.call("macro.call", ["name": "bump", "args": ["inner", 1]]) == 1)
        try caller.send(raw: #"{"jsonrpc":"2.0","id":1,"method":"macro.call","params":{"name":"loop"}}"#)
        // Sent while the loop (and with it every connection) is stuck: answered by the next process.
        try other.send(raw: #"{"jsonrpc":"2.0","id":2,"method":"macro.call","params":{"name":"bump","args":["inner",1]}}"#)
        let answer = try reply(caller, id: 1)
        #expect(answer["error"]["data"]["reason"] == "timeout", "\(answer)")
        #expect(try reply(other, id: 2)["result"] == 2)
        #expect(try caller.call("macro.call", ["name": "slow"]) == "ok")
    }

    @Test func allocatingInAnEndlessPromiseChainIsStoppedAtOneAndAHalfTimesTheCap() throws {
        var files = Self.files
        files["hog.js"] = "async function() { var a = []; for (;;) { a.push(new Uint8Array(1 << 20).fill(1)); await null } }"
        // Its budget is a minute: only the memory ceiling can stop it in time.
        let daemon = try DaemonProcess(files: files, config: "time_limit_ms: 60000\ncall_deadline_ms: 60000\nmemory_limit_mb: 128\n")
        let client = try daemon.client()
        let error = try #require(throws: RPCError.self) { try client.call("macro.call", ["name": "hog"]) }
        #expect(error.code == RPCError.macroThrew)
        #expect(error.message.contains("1.5 x memory_limit_mb"), "\(error)")
        #expect(try client.call("macro.call", ["name": "bump", "args": ["inner", 1]]) == 1)
    }

    @Test func cancelFromAnotherConnectionStopsAnAwaitLoop() throws {
        var files = Self.files
        files["loop.js"] = "async function() { progress.middle = 5; for (;;) await null; }"
        // Only the cancel can stop it: its budget is a minute.
        let daemon = try DaemonProcess(files: files, config: "time_limit_ms: 60000\ncall_deadline_ms: 60000\nstall_grace_ms: 300\n")
        let caller = try daemon.client()
        try caller.send(raw: #"{"jsonrpc":"2.0","id":1,"method":"macro.call","params":{"name":"loop"}}"#)
        let control = try daemon.client()
        let running = try control.runningCalls(waitingUpTo: 2)
        let call = try #require(running.first?["call"].intValue)
        #expect(try control.call("macro.cancel", ["call": .number(Double(call))]) == ["call": .number(Double(call)), "cancelled": true])
        let answer = try reply(caller, id: 1)
        #expect(answer["error"]["code"] == .number(Double(RPCError.timeout)))
        #expect(answer["error"]["data"]["reason"] == "cancelled")
        #expect(try control.call("progress.get") == ["inner": 0, "middle": 0, "outer": 0])
        #expect(try control.call("macro.running") == [])
    }

    @Test func requestsWaitingBehindTheStallAreAnsweredNotLost() throws {
        let (daemon, caller) = try Self.stuckInAnAwaitLoop(config: Self.config)
        // Queued while the engine is stuck, one of them cut in two at the moment of the restart.
        let queued = try daemon.client()
        try queued.send(raw: #"{"jsonrpc":"2.0","id":2,"method":"macro.call","params":{"name":"bump","args":["inner",1]}}"#)
        try queued.send(bytes: Array(#"{"jsonrpc":"2.0","id":3,"method":"macro.call","#.utf8))
        _ = try reply(caller, id: 1)
        try queued.send(raw: #""params":{"name":"bump","args":["inner",2]}}"#)
        #expect(try reply(queued, id: 2)["result"] == 1)
        #expect(try reply(queued, id: 3)["result"] == 3)
    }

    /// Clients that send their requests and half-close (`shutdown(SHUT_WR)`, as `socat` and
    /// `nc -N` do) while the engine is stuck get every reply, from this process or the next. The
    /// next process saw the socket's end of input before the requests handed over to it, and
    /// closed with nothing in flight (before the fix 24 of 60 such clients got EOF instead of the
    /// call's reply, in both io_thread modes). One client connected before the stall, three
    /// while it lasts (accepted by the busy control, or waiting in the backlog).
    @Test(arguments: ["engine", "separate"])
    func clientsThatHalfCloseDuringAStallGetEveryReply(ioThread: String) throws {
        var early: RPCClient?
        let (daemon, caller) = try Self.stuckInAnAwaitLoop(config: Self.config + "io_thread: \(ioThread)\n") { early = try $0.client() }
        var clients = [try #require(early)]
        for _ in 0..<3 { clients.append(try daemon.client()) }
        // All of them sent and half-closed before the stall's restart (300 ms + 300 ms away).
        for client in clients {
            try client.send(raw: #"{"jsonrpc":"2.0","id":1,"method":"progress.get"}"#)
            try client.send(raw: #"{"jsonrpc":"2.0","id":2,"method":"macro.call","params":{"name":"bump","args":["middle",1]}}"#)
            client.shutdownWrite()
        }
        var results: [MacroValue] = []
        for (index, client) in clients.enumerated() {
            client.setReceiveTimeout(seconds: 30)
            var replies: [Int: MacroValue] = [:]
            while let message = try client.readMessage() { replies[message["id"].intValue ?? -1] = message }
            #expect(replies[1]?["result"]["inner"] == 0, "client \(index): \(replies)")
            results.append(replies[2]?["result"] ?? .undefined)
        }
        // Each call ran once, in some order: 1, 2, 3 and 4.
        #expect(Set(results.compactMap(\.intValue)) == [1, 2, 3, 4], "\(results)\nlog:\n\(daemon.log)")
        #expect(try reply(caller, id: 1)["error"]["data"]["reason"] == "timeout")
    }

    /// `macro cancel` run while an await loop keeps the engine stuck (so its connection is new,
    /// accepted while the engine is busy) of a call only an engine restart can stop: the restart
    /// stops it, and the cancel is answered. Before, with `io_thread: engine`, the cancel's reply
    /// was owed until the call ended, and the call never ended in that process: `macro cancel`
    /// waited forever.
    @Test(arguments: ["engine", "separate"])
    func macroCancelOfAnAwaitLoopIsAnsweredByTheRestart(ioThread: String) throws {
        let (daemon, caller) = try Self.stuckInAnAwaitLoop(
            config: "time_limit_ms: 60000\ncall_deadline_ms: 60000\nstall_grace_ms: 300\nio_thread: \(ioThread)\n")
        // At most 30 s: a cancel left unanswered is a failure, not a hung test.
        let cancel = try BinaryRunner.run("/usr/bin/timeout", ["-s", "KILL", "30", BinaryRunner.binDirectory + "/macro", "cancel", "1", "--socket", daemon.socket])
        #expect(cancel.status == 0, "\(cancel)\nlog:\n\(daemon.log)")
        #expect(cancel.stdout == "cancelled call 1\n")
        let answer = try reply(caller, id: 1)
        #expect(answer["error"]["data"]["reason"] == "cancelled", "\(answer)")
    }

    /// A macro file is parsed, not run, before it loads: one whose expression would
    /// run code at load is refused without running it. A lib file is a script: code it runs at
    /// load that stalls the engine gets it quarantined at once, at start and on a reload.
    @Test func aFileThatStallsWhileLoadingIsSkippedAtStartAndOnReload() throws {
        let dir = TemporaryDirectory(prefix: "macrod")
        try dir.write("macros/lib/chain.js", "(function () { function f() { Promise.resolve().then(f) } f() })()\n")
        var files = Self.files
        files["chain.js"] = "(function () { function f() { Promise.resolve().then(f) } f() })(), function () { return 1 }"
        let daemon = try DaemonProcess(files: files, config: Self.config, dir: dir)
        let client = try daemon.client()
        let list = try #require(try client.call("macro.list").arrayValue)
        let chain = try #require(list.first { $0["name"] == "chain" })
        #expect(chain["status"] == "error")
        #expect(
            chain["error"]["message"]
                == "a macro file must hold one function expression, e.g. function() { ... }; this one is a sequence (comma) expression (nothing of it was run)")
        let lib = try #require(list.first { $0["name"] == "lib/chain" })
        #expect(lib["quarantined"] == true, "\(lib)\n\(daemon.log)")
        #expect(lib["error"]["message"].stringValue?.hasPrefix("lib/chain is quarantined: while it loaded, its code kept the engine busy") == true, "\(lib)")
        #expect(try client.call("macro.call", ["name": "bump", "args": ["inner", 1]]) == 1)

        // Saved while macrod runs: stalls the reload, is quarantined, and a fixed save loads.
        try daemon.dir.write("macros/lib/chain2.js", "(async function () { for (;;) await null })()\nfunction two() { return 2 }\n")
        // Looked at after each restart, once the next process says READY=1.
        var entry: MacroValue = .undefined
        for _ in 0..<3 where entry["quarantined"] != true {
            guard daemon.nextReady(timeout: .seconds(30)) else { break }
            entry = try client.call("macro.list").arrayValue?.first { $0["name"] == "lib/chain2" } ?? .undefined
        }
        #expect(entry["quarantined"] == true, "\(daemon.log)")
        _ = try client.call("subscribe", ["events": ["macros"]])
        try daemon.dir.write("macros/lib/chain2.js", "function two() { return 2 }\n")
        try daemon.dir.write("macros/useTwo.js", "function () { return two() }")
        // Both loaded (in either order): the lib's function is defined, and the macro calls it.
        var loaded: Set<String> = []
        while !loaded.isSuperset(of: ["lib/chain2", "useTwo"]) {
            loaded.insert(try client.waitFor("macro.loaded")["name"].stringValue ?? "")
        }
        #expect(try client.call("macro.call", ["name": "useTwo"]) == 2)
        #expect(try client.call("progress.get")["inner"] == 1)
        // Both quarantines are on the audit log, in order, as the daemon's own acts.
        let quarantines = try client.call("audit.recent", ["kind": "quarantine"]).arrayValue ?? []
        #expect(quarantines.map { $0["name"] } == ["lib/chain", "lib/chain2"], "\(quarantines)")
        #expect(quarantines.map { $0["who"] } == [["surface": "daemon"], ["surface": "daemon"]])
        #expect(quarantines.map { $0["details"]["file"] } == [.string(dir.url("macros/lib/chain.js")), .string(dir.url("macros/lib/chain2.js"))])
    }

    @Test func aSaveWhoseSourceWouldStallIsRefusedWithoutRunningIt() throws {
        let daemon = try DaemonProcess(files: Self.files, config: Self.config)
        let client = try daemon.client()
        let stalling = "(function () { function f() { Promise.resolve().then(f) } f() })(), function () { return 'new' }"
        let error = try #require(throws: RPCError.self) { try client.call("macro.save", ["name": "bump", "source": .string(stalling)]) }
        #expect(error.code == RPCError.syntaxError)
        #expect(error.message.hasPrefix("a macro file must hold one function expression"))
        // The file on disk was never replaced, and nothing of the refused source ran.
        #expect(try daemon.dir.read("macros/bump.js") == Self.files["bump.js"])
        #expect(try client.call("macro.call", ["name": "bump", "args": ["inner", 2]]) == 2)
        #expect(!daemon.log.contains("restarting the engine"), "\(daemon.log)")
    }

    @Test func aMemoryBombStaysNearTheCapAndLeavesNoAftermath() throws {
        var files = Self.files
        files["bomb.js"] = "function() { var a = []; for (;;) a.push(new Uint8Array(1 << 20).fill(7)) }"
        files["fifty.js"] = "function() { var t = Date.now(), n = 0; while (Date.now() - t < 50) { n += [1, 2, 3].map(function (x) { return x }).length } return n > 0 }"
        let daemon = try DaemonProcess(files: files, config: "time_limit_ms: 60000\nmemory_limit_mb: 512\n")
        let client = try daemon.client()
        #expect(throws: RPCError.self) { try client.call("macro.call", ["name": "bomb"]) }
        let peakKiB = try daemon.memoryKiB("VmHWM")
        // The cap plus 25%, the daemon's own baseline included.
        #expect(peakKiB < 640 * 1024, "peak RSS \(peakKiB / 1024) MiB")
        var failures: [String] = []
        for _ in 0..<100 {
            do { if try client.call("macro.call", ["name": "fifty"]) != true { failures.append("wrong result") } } catch { failures.append("\(error)") }
        }
        #expect(failures == [])
    }
}
