import Foundation
import MacroEngineCore
import MacroRPC
import MacroTestSupport
import Testing

/// `macro.console`: a call's console output goes to its caller, as it happens, before the reply.
@Suite("macrod console forwarding")
struct ConsoleForwardingTests {
    static let files = [
        "chat.js": """
        async function(n) {
            console.log("start", n);
            await sleep(5);
            console.warn({ a: 1 });
            await new Promise(function (resolve) { setTimeout(function () { console.error("from a timer"); resolve(); }, 5); });
            console.info("multi\\nline");
            console.debug("end");
            return n;
        }
        """,
        "quiet.js": "function() { console.log('sync only'); return 1 }",
        "leaves.js": "function() { setTimeout(function () { console.log('late'); }, 20); return 'left' }",
        "stack.js": "function() {\n  var e = new Error('x');\n  console.log(e);\n  console.log(e.stack);\n  return 1\n}",
    ]

    /// Reads lines until the reply to the request with raw id `id`; returns the lines before it
    /// and the reply.
    static func linesUntilReply(_ client: RPCClient, id: String) throws -> (before: [String], reply: String) {
        var before: [String] = []
        while let line = try client.readLine() {
            if line.hasPrefix(#"{"jsonrpc":"2.0","id":\#(id),"#) { return (before, line) }
            before.append(line)
        }
        throw RPCError(code: -1, message: "the connection closed before the reply to \(id); got \(before)")
    }

    @Test func aCallsConsoleOutputComesFirstWithTheRequestIDAsSent() throws {
        let daemon = try DaemonProcess(files: Self.files)
        let client = try daemon.client()
        client.setReceiveTimeout(seconds: 10)
        try client.send(raw: #"{"jsonrpc":"2.0","id":1152921504606846977,"method":"macro.call","params":{"name":"chat","args":[7]}}"#)
        let (before, reply) = try Self.linesUntilReply(client, id: "1152921504606846977")
        #expect(reply == #"{"jsonrpc":"2.0","id":1152921504606846977,"result":7}"#)
        let first = try #require(before.first)
        let call = try #require(try MacroValue(jsonText: first)["params"]["call"].intValue)
        let prefix = #"{"jsonrpc":"2.0","method":"macro.console","params":{"id":1152921504606846977,"call":\#(call),"#
        #expect(
            before == [
                prefix + #""level":"log","message":"start 7"}}"#,
                prefix + #""level":"warn","message":"{ a: 1 }"}}"#,
                prefix + #""level":"error","message":"from a timer"}}"#,
                prefix + #""level":"info","message":"multi\nline"}}"#,
                prefix + #""level":"debug","message":"end"}}"#,
            ])
        // A string id is echoed with its escapes.
        try client.send(raw: #"{"jsonrpc":"2.0","id":"q\u0031","method":"macro.call","params":{"name":"quiet"}}"#)
        let quiet = try Self.linesUntilReply(client, id: #""q\u0031""#)
        #expect(quiet.before.count == 1)
        #expect(quiet.before.first?.hasPrefix(#"{"jsonrpc":"2.0","method":"macro.console","params":{"id":"q\u0031","call":"#) == true)
        #expect(quiet.before.first?.hasSuffix(#","level":"log","message":"sync only"}}"#) == true)
    }

    @Test func onlyTheCallerGetsItAndTheLogStillDoes() throws {
        let daemon = try DaemonProcess(files: Self.files)
        let watcher = try daemon.client()
        _ = try watcher.call("subscribe", ["events": ["log", "progress", "macros"]])
        let caller = try daemon.client()
        try caller.send(raw: #"{"jsonrpc":"2.0","id":"a","method":"macro.call","params":{"name":"quiet"}}"#)
        let (before, _) = try Self.linesUntilReply(caller, id: #""a""#)
        #expect(before.count == 1)
        // The log has it (with the macro's name); the other connection got no macro.console.
        var record = try watcher.waitFor("log")
        while record["message"] != "sync only" { record = try watcher.waitFor("log") }
        #expect(record["level"] == "info")
        // The call's id too (the one `macro.console` named).
        let call = try MacroValue(jsonText: before[0])["params"]["call"].intValue
        #expect(record["metadata"] == ["macro": "quiet", "call": .string(call.map(String.init) ?? "?")])
        #expect(try watcher.call("progress.get") == ["inner": 0, "middle": 0, "outer": 0])
        #expect(!watcher.pendingNotifications.contains { $0["method"] == "macro.console" })
    }

    @Test func aNotificationCallGetsNoConsoleLines() throws {
        let daemon = try DaemonProcess(files: Self.files)
        let client = try daemon.client()
        try client.send(raw: #"{"jsonrpc":"2.0","method":"macro.call","params":{"name":"quiet"}}"#)
        // Requests run in arrival order: anything the call sent would come before this reply.
        try client.send(raw: #"{"jsonrpc":"2.0","id":2,"method":"progress.get"}"#)
        #expect(try client.readLine() == #"{"jsonrpc":"2.0","id":2,"result":{"inner":0,"middle":0,"outer":0}}"#)
    }

    @Test func outputAfterTheCallSettledIsNotForwarded() throws {
        let daemon = try DaemonProcess(files: Self.files)
        let watcher = try daemon.client()
        _ = try watcher.call("subscribe", ["events": ["log"]])
        let client = try daemon.client()
        #expect(
            try Self.exchange(client, #"{"jsonrpc":"2.0","id":1,"method":"macro.call","params":{"name":"leaves"}}"#)
                == #"{"jsonrpc":"2.0","id":1,"result":"left"}"#)
        // The timer's line reaches the log...
        var record = try watcher.waitFor("log")
        while record["message"] != "late" { record = try watcher.waitFor("log") }
        // ...and not the caller, whose call was over: its next line is its next reply.
        #expect(
            try Self.exchange(client, #"{"jsonrpc":"2.0","id":2,"method":"progress.get"}"#)
                == #"{"jsonrpc":"2.0","id":2,"result":{"inner":0,"middle":0,"outer":0}}"#)
    }

    @Test func internalFramesNeverReachTheCallerOrTheLog() throws {
        let daemon = try DaemonProcess(files: Self.files)
        let client = try daemon.client()
        try client.send(raw: #"{"jsonrpc":"2.0","id":1,"method":"macro.call","params":{"name":"stack"}}"#)
        let (before, reply) = try Self.linesUntilReply(client, id: "1")
        #expect(reply == #"{"jsonrpc":"2.0","id":1,"result":1}"#)
        let messages = try before.map { try MacroValue(jsonText: $0)["params"]["message"].stringValue ?? "" }
        #expect(
            messages == [
                "Error: x\n    at stack@\(daemon.macros)/stack.js:2:20",
                "stack@\(daemon.macros)/stack.js:2:20",
            ])
        let recent = try client.call("log.recent").arrayValue ?? []
        #expect(recent.count >= 2)
        #expect(!recent.contains { $0.jsonText().contains("__macroengine") })
        #expect(!daemon.log.contains("__macroengine"))
        // On stderr a multi-line message keeps its further lines under the record, indented.
        let record = try #require(daemon.log.range(of: " info macrod: Error: x macro=stack call="))
        #expect(daemon.log[record.upperBound...].drop { $0.isNumber }.hasPrefix("\n        at stack@\(daemon.macros)/stack.js:2:20\n"))
    }

    /// `engine.eval` with `call: true` (what `macro repl` sends) runs the source's function as a
    /// call: console output to the caller before the reply, a promise awaited, listed by
    /// `macro.running` under the function's name and cancelled by `macro.cancel`.
    @Test func anEvalRunAsACallForwardsItsConsoleAwaitsAndCanBeCancelled() throws {
        let daemon = try DaemonProcess(config: "engine_eval: true\n")
        let client = try daemon.client()
        client.setReceiveTimeout(seconds: 10)
        let source = #"(async function () { console.log('hey'); await sleep(5); console.warn('later'); return 5 })"#
        try client.send(raw: #"{"jsonrpc":"2.0","id":7,"method":"engine.eval","params":{"source":\#(MacroValue.string(source).jsonText()),"call":true}}"#)
        let (before, reply) = try Self.linesUntilReply(client, id: "7")
        #expect(reply == #"{"jsonrpc":"2.0","id":7,"result":5}"#)
        #expect(try before.map { try MacroValue(jsonText: $0)["params"]["message"] } == ["hey", "later"])
        #expect(try before.map { try MacroValue(jsonText: $0)["method"] } == ["macro.console", "macro.console"])

        // Not a function: refused before anything is called.
        let refused = try #require(throws: RPCError.self) { try client.call("engine.eval", ["source": "42", "call": true]) }
        #expect(refused.code == -32602)
        #expect(refused.message == "Invalid params: source must evaluate to a function when call is true")

        // A runaway loop, listed under its name, cancelled from another connection.
        try client.send(raw: #"{"jsonrpc":"2.0","id":8,"method":"engine.eval","params":{"source":"(function spin() { while (true) {} })","call":true}}"#)
        let other = try daemon.client()
        let running = try other.runningCalls()
        #expect(running.map { $0["name"] } == ["spin"], "\(daemon.log)")
        let cancelled = try other.call("macro.cancel", ["call": running[0]["call"]])
        #expect(cancelled["cancelled"] == true)
        let (_, stopped) = try Self.linesUntilReply(client, id: "8")
        let error = try MacroValue(jsonText: stopped)["error"]
        #expect(error["code"] == -32001)
        #expect(error["data"]["reason"] == "cancelled")
    }

    static func exchange(_ client: RPCClient, _ line: String) throws -> String {
        try client.send(raw: line)
        return try #require(try client.readLine())
    }
}
