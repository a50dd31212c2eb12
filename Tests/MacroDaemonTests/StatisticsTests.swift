import Foundation
import MacroEngineCore
import MacroRPC
import MacroTestSupport
import Testing

/// `macro.stats` and `macro stats` after a scripted mix of calls against a real macrod.
@Suite("Per-macro statistics")
struct StatisticsTests {
    static let files = [
        "echo.js": "function(x) { return x }",
        "boom.js": "function() {\n  throw new RangeError('out of range');\n}",
        "spin.js": "function() { while (true) {} }",
        "nap.js": "async function() { await sleep(60000) }",
    ]

    /// Runs the mix: echo 5 ok, boom 3 threw, spin 2 timeouts and 1 cancelled, nap 1 timeout
    /// (awaiting, not in JavaScript).
    static func runMix(_ daemon: DaemonProcess) throws {
        let client = try daemon.client()
        for value in 1...5 { #expect(try client.call("macro.call", ["name": "echo", "args": [.number(Double(value))]]) == .number(Double(value))) }
        for _ in 0..<3 {
            let error = try #require(throws: RPCError.self) { try client.call("macro.call", ["name": "boom"]) }
            #expect(error.code == RPCError.macroThrew)
        }
        for _ in 0..<2 {
            let error = try #require(throws: RPCError.self) { try client.call("macro.call", ["name": "spin", "timeoutMs": 100]) }
            #expect(error.code == RPCError.timeout)
        }
        let napError = try #require(throws: RPCError.self) { try client.call("macro.call", ["name": "nap", "timeoutMs": 100]) }
        #expect(napError.code == RPCError.timeout)
        // A runaway call cancelled from another connection.
        let caller = try daemon.client()
        try caller.send(raw: #"{"jsonrpc":"2.0","id":7,"method":"macro.call","params":{"name":"spin","timeoutMs":60000}}"#)
        let call = try #require(try client.runningCalls(waitingUpTo: 5).first?["call"].intValue)
        _ = try client.call("macro.cancel", ["call": .number(Double(call))])
        let reply = try #require(try caller.readMessage())
        #expect(reply["error"]["data"]["reason"] == "cancelled")
    }

    @Test func statsCountEveryOutcomeExactly() throws {
        let daemon = try DaemonProcess(files: Self.files)
        try Self.runMix(daemon)
        let result = try BinaryRunner.macro("stats", "--json", "--socket", daemon.socket)
        #expect(result.status == 0, "\(result)")
        let rows = try #require(try MacroValue(jsonText: result.stdout).arrayValue)
        #expect(rows.map { $0["name"] } == ["boom", "echo", "nap", "spin"])
        func row(_ name: String) -> MacroValue { rows.first { $0["name"] == .string(name) } ?? .null }
        func errors(threw: Int = 0, timeout: Int = 0, cancelled: Int = 0) -> MacroValue {
            ["threw": .number(Double(threw)), "timeout": .number(Double(timeout)), "cancelled": .number(Double(cancelled)), "memory": 0, "quarantined": 0, "other": 0]
        }
        #expect(row("echo")["calls"] == 5)
        #expect(row("echo")["ok"] == 5)
        #expect(row("echo")["errors"] == errors())
        #expect(row("echo")["lastError"] == .null)
        #expect(row("boom")["calls"] == 3)
        #expect(row("boom")["ok"] == 0)
        #expect(row("boom")["errors"] == errors(threw: 3))
        #expect(row("boom")["lastError"]["kind"] == "threw")
        #expect(row("boom")["lastError"]["message"] == "RangeError: out of range")
        #expect(row("spin")["calls"] == 3)
        #expect(row("spin")["errors"] == errors(timeout: 2, cancelled: 1))
        #expect(row("spin")["lastError"]["kind"] == "cancelled")
        #expect(row("nap")["calls"] == 1)
        #expect(row("nap")["errors"] == errors(timeout: 1))
        // lastError's time is ISO 8601 UTC with milliseconds.
        let time = row("boom")["lastError"]["time"].stringValue ?? ""
        #expect(time.count == 24 && time.hasSuffix("Z") && time.contains("T"), "\(time)")
        for name in ["boom", "echo", "nap", "spin"] {
            let r = row(name)
            let (p50, p95, p99, max) = (r["p50Ms"].doubleValue ?? -1, r["p95Ms"].doubleValue ?? -1, r["p99Ms"].doubleValue ?? -1, r["maxMs"].doubleValue ?? -1)
            #expect(p50 > 0 && p50 <= p95 && p95 <= p99 && p99 <= max, "\(name): \(r)")
            #expect(r["reloads"] == 0 && r["failedReloads"] == 0)
        }
        // A timed-out call lasted at least its deadline; the runaway loop spent it in JavaScript,
        // the awaiting macro did not.
        #expect((row("spin")["maxMs"].doubleValue ?? 0) >= 100)
        #expect((row("spin")["jsMs"].doubleValue ?? 0) >= 150)
        #expect((row("nap")["maxMs"].doubleValue ?? 0) >= 100)
        #expect((row("nap")["jsMs"].doubleValue ?? 1000) < (row("nap")["maxMs"].doubleValue ?? 0))
        #expect((row("echo")["jsMs"].doubleValue ?? 0) > 0)
    }

    @Test func theTableShowsTheCountsAndTheLastErrors() throws {
        let daemon = try DaemonProcess(files: Self.files)
        try Self.runMix(daemon)
        let result = try BinaryRunner.macro("stats", "--socket", daemon.socket)
        #expect(result.status == 0, "\(result)")
        let lines = result.stdout.split(separator: "\n").map(String.init)
        let header = lines.first?.split(separator: " ").map(String.init)
        #expect(header == ["NAME", "CALLS", "OK", "ERRORS", "P50MS", "P95MS", "P99MS", "MAXMS", "JSMS", "RELOADS"])
        func counts(_ name: String) -> [String] {
            let cells = lines.first { $0.hasPrefix(name + " ") }?.split(separator: " ").map(String.init) ?? []
            return Array(cells.prefix(4)) + Array(cells.suffix(1))
        }
        #expect(counts("echo") == ["echo", "5", "5", "0", "0"])
        #expect(counts("boom") == ["boom", "3", "0", "3", "0"])
        #expect(counts("spin") == ["spin", "3", "0", "3", "0"])
        #expect(counts("nap") == ["nap", "1", "0", "1", "0"])
        #expect(lines.contains("errors of boom: threw 3"))
        #expect(lines.contains("errors of spin: timeout 2, cancelled 1"))
        // The table was 127 columns wide.
        #expect(lines.filter { !$0.hasPrefix("last error of ") && !$0.hasPrefix("errors of ") }.allSatisfy { $0.count <= 80 }, "\(lines)")
        #expect(lines.contains { $0.hasPrefix("last error of boom: threw at ") && $0.hasSuffix(": RangeError: out of range") })
        #expect(lines.contains { $0.hasPrefix("last error of spin: cancelled at ") })
    }

    @Test func oneMacroResetAndBadParams() throws {
        let daemon = try DaemonProcess(files: Self.files)
        let client = try daemon.client()
        for _ in 0..<2 { _ = try client.call("macro.call", ["name": "echo", "args": [1]]) }
        _ = try #require(throws: RPCError.self) { try client.call("macro.call", ["name": "boom"]) }
        let echo = try client.call("macro.stats", ["name": "echo"])
        #expect(echo.arrayValue?.count == 1)
        #expect(echo[0]["calls"] == 2)
        // A reset answers the statistics as they were, then clears them (of that macro only).
        #expect(try client.call("macro.stats", ["name": "echo", "reset": true])[0]["calls"] == 2)
        let cleared = try client.call("macro.stats", ["name": "echo"])[0]
        #expect(cleared["calls"] == 0)
        #expect(cleared["p50Ms"] == .null && cleared["maxMs"] == .null)
        #expect(cleared["jsMs"] == 0)
        #expect(try client.call("macro.stats", ["name": "boom"])[0]["calls"] == 1)
        let all = try BinaryRunner.macro("stats", "--reset", "--json", "--socket", daemon.socket)
        #expect(try MacroValue(jsonText: all.stdout).arrayValue?.map { $0["calls"] } == [1, 0, 0, 0])
        #expect(try client.call("macro.stats").arrayValue?.map { $0["calls"] } == [0, 0, 0, 0])
        // Bad params: exact errors.
        let ghost = try #require(throws: RPCError.self) { try client.call("macro.stats", ["name": "ghost"]) }
        #expect(ghost.code == RPCError.noSuchMacro)
        #expect(ghost.message == "no macro named 'ghost'")
        #expect(try BinaryRunner.macro("stats", "ghost", "--socket", daemon.socket).status == 66)
        let reset = try #require(throws: RPCError.self) { try client.call("macro.stats", ["reset": "yes"]) }
        #expect(reset.code == -32602)
        #expect(reset.message == "Invalid params: reset must be true or false")
        let positional = try #require(throws: RPCError.self) { try client.call("macro.stats", ["echo"]) }
        #expect(positional.code == -32602)
    }

    @Test func reloadsAndFailedReloadsAreCounted() throws {
        let daemon = try DaemonProcess(files: Self.files)
        let client = try daemon.client()
        _ = try client.call("subscribe", ["events": ["macros"]])
        _ = try client.call("macro.save", ["name": "echo", "source": "function(x) { return [x] }"])
        _ = try client.waitFor("macro.loaded")
        try daemon.dir.write("macros/echo.js", "function(x) { return ( }")
        let failed = try client.waitFor("macro.failed")
        #expect(failed["name"] == "echo")
        let echo = try client.call("macro.stats", ["name": "echo"])[0]
        #expect(echo["reloads"] == 1)
        #expect(echo["failedReloads"] == 1)
        #expect(try client.call("macro.stats", ["name": "boom"])[0]["reloads"] == 0)
    }
}
