import Foundation
import MacroBase
import MacroDaemonTesting
import MacroEngineCore
import MacroRPC
import MacroTestSupport
import Testing

/// A debug session runs in a process of its own, under the limits a live call has: it is stopped
/// at the memory cap, at the call deadline and by a terminate, whatever shape its code takes (an
/// eval'd promise chain no hook sees included), and the process goes with it. Each session starts
/// the built `macrod --debug-worker`.
@Suite("Debug sessions under the engine's limits")
struct DebugSessionLimitsTests {
    private static func service(
        _ files: [String: String], allowEval: Bool = true, memoryLimitMB: Int = 64, callDeadline: Duration = .seconds(3)
    ) throws -> (InProcessService, TemporaryDirectory) {
        let directory = TemporaryDirectory(prefix: "debug-limits")
        try FileManager.default.createDirectory(atPath: directory.url("macros"), withIntermediateDirectories: true)
        for (name, text) in files { _ = try directory.write("macros/\(name)", text) }
        var config = MacroConfig(macrosDirectory: directory.url("macros"), stateFile: directory.url("state.json"), allowEval: allowEval)
        config.memoryLimitMB = memoryLimitMB
        config.callDeadline = callDeadline
        return (try InProcessService(config: config), directory)
    }

    static let bump = "function bump(by) { progress.inner += by; return progress.inner }"

    /// Starts `name`, runs it (and terminates it), and returns the `debug.terminated` params and
    /// the worker's pid. Replies and notifications may come in either order: a session can end
    /// by its limits before a terminate is answered.
    private static func run(_ client: InProcessClient, _ name: String, terminateAfterRun: Bool = false) async throws -> (MacroValue, pid_t) {
        let started = try await client.call(.debugStart, ["name": .string(name)], id: 1)
        let session = try #require(started["result"]["session"].intValue, "\(started)")
        let pid = pid_t(try #require(started["result"]["pid"].intValue))
        try await client.request(.debugRun, ["session": .number(Double(session))], id: 2)
        if terminateAfterRun { try await client.request(.debugTerminate, ["session": .number(Double(session))], id: 3) }
        var replies: [MacroValue] = [], terminated: MacroValue?
        while terminated == nil || replies.count < (terminateAfterRun ? 2 : 1) {
            let message = try await client.next()
            if message["method"] == "debug.terminated" { terminated = message["params"] } else if message["id"] != .undefined { replies.append(message) }
        }
        // debug.run is answered {}; a terminate too, or (when the session had ended first) -32020 `ended`.
        #expect(replies.first?["result"] == [:], "\(replies)")
        return (terminated ?? .null, pid)
    }

    /// The process is gone (reaped) by the time `terminated` is sent for a session macrod ended.
    private static func isGone(_ pid: pid_t) -> Bool { kill(pid, 0) == -1 && errno == ESRCH }

    @Test func anEvaldAwaitLoopEndsAtTerminateAndItsProcessWithIt() async throws {
        let (service, directory) = try Self.service(
            [
                "bump.js": Self.bump,
                "dbgspin.js": #"async function dbgspin() { await (0, eval)("(async () => { for (;;) await null; })()"); }"#,
            ], callDeadline: .seconds(120))
        let client = try await service.connect()
        defer { withExtendedLifetime(directory) {} }
        let (terminated, pid) = try await Self.run(client, "dbgspin", terminateAfterRun: true)
        #expect(terminated["error"]["code"] == "cancelled")
        #expect(terminated["error"]["message"] == "the debug session was terminated")
        #expect(Self.isGone(pid))
        #expect(try await client.call(.call, ["name": "bump", "args": [1]], id: 9)["result"] == 1)
    }

    @Test func anEvaldAwaitLoopEndsAtTheCallDeadlineInRunningTime() async throws {
        let (service, directory) = try Self.service(
            ["dbgspin.js": #"async function dbgspin() { await (0, eval)("(async () => { for (;;) await null; })()"); }"#], callDeadline: .seconds(1))
        let client = try await service.connect()
        defer { withExtendedLifetime(directory) {} }
        let (terminated, pid) = try await Self.run(client, "dbgspin")
        #expect(terminated["error"]["code"] == "timeout")
        #expect(terminated["error"]["message"] == "timed out after 1000 ms of running (call_deadline_ms)")
        #expect(Self.isGone(pid))
    }

    @Test(arguments: [
        // An eval'd chain no hook sees, and an instrumented one.
        #"async function bomb() { await (0, eval)("(async () => { const a = []; for (;;) { a.push(new Array(1e5).fill(1)); await null } })()"); }"#,
        "async function bomb() { const a = []; for (;;) { a.push(new Array(1e5).fill(1)); await null } }",
    ])
    func aSessionThatAllocatesIsStoppedAtTheMemoryCapAndNoLiveCallIsBlamed(_ source: String) async throws {
        let (service, directory) = try Self.service(["bump.js": Self.bump, "bomb.js": source], memoryLimitMB: 64, callDeadline: .seconds(60))
        let client = try await service.connect()
        defer { withExtendedLifetime(directory) {} }
        let (terminated, pid) = try await Self.run(client, "bomb")
        #expect(terminated["error"]["code"] == "memoryLimit")
        // Stopped by the session's own watchdog, or killed by macrod: the memory kind either way.
        #expect(terminated["error"]["message"].stringValue?.hasSuffix("64 MiB limit (memory_limit_mb)") == true, "\(terminated)")
        #expect(Self.isGone(pid))
        // The live engine was not touched: the live macro answers, and nothing is quarantined.
        #expect(try await client.call(.call, ["name": "bump", "args": [2]], id: 9)["result"] == 2)
        #expect(try await client.call(.list, id: 10)["result"].arrayValue?.allSatisfy { $0["quarantined"] == .undefined } == true)
    }

    /// A worker that dies (here, killed from outside) ends its session with a `terminated` that
    /// says so; requests written to it meanwhile fail, and never signal macrod (SIGPIPE).
    @Test func aWorkerThatDiesEndsItsSessionAndRequestsToItAreHarmless() async throws {
        let (service, directory) = try Self.service(["bump.js": Self.bump])
        let client = try await service.connect()
        defer { withExtendedLifetime(directory) {} }
        let started = try await client.call(.debugStart, ["name": "bump", "stopOnEntry": true], id: 1)
        let session = try #require(started["result"]["session"].intValue)
        let pid = pid_t(try #require(started["result"]["pid"].intValue))
        #expect(kill(pid, SIGKILL) == 0)
        for id in 2..<40 {
            try await client.request(.debugSetBreakpoints, ["session": .number(Double(session)), "path": "bump.js", "breakpoints": [["line": 1]]], id: id)
        }
        var terminated: MacroValue?
        var answered = 0
        while terminated == nil || answered < 38 {
            let message = try await client.next()
            if message["method"] == "debug.terminated" { terminated = message["params"] } else if message["id"] != .undefined { answered += 1 }
        }
        #expect(terminated?["error"]["message"] == "the debug session's process ended (signal 9) before its macro did")
        #expect(Self.isGone(pid))
        #expect(try await client.call(.call, ["name": "bump", "args": [1]], id: 99)["result"] == 1)
    }

    /// Through macrod and the worker: an endless evaluate while stopped fails alone at
    /// `evaluateLimitMs`, and the stopped session answers the next request and runs on.
    @Test func anEndlessEvaluateFailsAtItsOwnLimitAndTheSessionGoesOn() async throws {
        let (service, directory) = try Self.service(["bump.js": Self.bump])
        let client = try await service.connect()
        defer { withExtendedLifetime(directory) {} }
        let started = try await client.call(.debugStart, ["name": "bump", "args": [2], "stopOnEntry": true, "evaluateLimitMs": 1000], id: 1)
        let session = MacroValue.number(Double(try #require(started["result"]["session"].intValue, "\(started)")))
        try await client.request(.debugRun, ["session": session], id: 2)
        var stopped = false, ran = false
        while !stopped || !ran {
            let message = try await client.next()
            if message["method"] == "debug.stopped" { stopped = true } else if message["id"] == 2 { ran = true }
        }
        let endless = try await client.call(.debugRequest, ["session": session, "op": "evaluate", "args": ["expression": "for (;;) {}"]], id: 3)
        #expect(endless["error"]["message"] == "Error: this request was stopped after 1000 ms (a debug session's evaluate limit)", "\(endless)")
        let after = try await client.call(.debugRequest, ["session": session, "op": "evaluate", "args": ["expression": "by + 1"]], id: 4)
        #expect(after["result"]["value"] == "3", "\(after)")
        try await client.request(.debugRequest, ["session": session, "op": "continue"], id: 5)
        var terminated: MacroValue?
        while terminated == nil {
            let message = try await client.next()
            if message["method"] == "debug.terminated" { terminated = message["params"] }
        }
        #expect(terminated?["result"] == 2, "\(String(describing: terminated))")
    }

    @Test func fortyStartsInOneWriteAdmitTheSessionLimit() async throws {
        let (service, directory) = try Self.service(["bump.js": Self.bump])
        let client = try await service.connect()
        defer { withExtendedLifetime(directory) {} }
        let lines = (1...40).map { #"{"jsonrpc":"2.0","id":\#($0),"method":"debug.start","params":{"name":"bump","stopOnEntry":true}}"# }
        try await client.send(lines.joined(separator: "\n") + "\n")
        var started = 0, refused: [MacroValue] = []
        while started + refused.count < 40 {
            let reply = try await client.next()
            guard reply["id"] != .undefined else { continue }
            if reply["result"] != .undefined { started += 1 } else { refused.append(reply["error"]) }
        }
        #expect(started == 8)
        #expect(refused.count == 32)
        #expect(refused.allSatisfy { $0["message"] == "8 debug sessions are open; end one first" })
    }

    /// A session launched at once after a save, with the collector running continuously: every
    /// value the instrumenter made in Swift memory is protected, so none is read after it was
    /// collected (a general-protection fault in `JSRopeString::resolveRope` before).
    @Test func launchingUnderContinuousCollectionNeverCrashes() throws {
        let directory = TemporaryDirectory(prefix: "debug-gc")
        _ = try directory.write("bump.js", Self.bump)
        _ = try directory.write("lib/rings.js", "function ring(name) { return progress[name] }")
        _ = try directory.write("dbgspin.js", #"async function dbgspin() { await (0, eval)("(async () => { for (;;) await null; })()"); }"#)
        // The launch is where values wait in Swift memory (the instrumenter's arguments); the
        // worker then ends, its input closed, with the session it never ran.
        let launch = #"{"launch":{"macro":"bump","arguments":[2],"directory":"\#(directory.path)"}}"# + "\n"
        for round in 1...25 {
            let result = try BinaryRunner.run("macrod", ["--debug-worker"], environment: ["JSC_collectContinuously": "true"], input: launch)
            #expect(result.status == 0, "round \(round): \(result)")
            #expect(result.stdout.hasPrefix(#"{"launched":{"files":["\#(DebugSession.normalized(directory.url("lib/rings.js")))""#), "round \(round): \(result)")
            #expect(result.stdout.hasSuffix(#""message":"the debug session ended before it ran"}}}"# + "\n"), "round \(round): \(result)")
        }
    }
}
