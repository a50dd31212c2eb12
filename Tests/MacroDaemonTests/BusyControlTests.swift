import Foundation
import MacroEngineCore
import MacroRPC
import MacroTestSupport
import Testing

/// The connections live on the engine's thread by default (one wake-up per call), and
/// a control thread takes them over while JavaScript keeps that thread busy, so the control lane
/// still answers a runaway from any connection, an already-open one included, and nothing the
/// clients send meanwhile is lost or reordered.
@Suite("macrod's control while the engine is busy")
struct BusyControlTests {
    static let files = [
        "runaway.js": "function runaway() {\n  console.log('spinning');\n  progress.outer = 7;\n  while (true) {}\n}\n",
        "add.js": "function add(amount) { progress.inner += amount; return progress.inner }",
    ]
    /// Only a cancel can stop the runaway: its budget is a minute.
    static let config = "time_limit_ms: 60000\ncall_deadline_ms: 60000\n"

    /// A daemon whose runaway runs: a control connection opened before it, the caller, the call's id.
    static func startRunaway() throws -> (DaemonProcess, RPCClient, RPCClient, Int) {
        let daemon = try DaemonProcess(files: files, config: config)
        let control = try daemon.client()
        let caller = try daemon.client()
        try caller.send(raw: #"{"jsonrpc":"2.0","id":1,"method":"macro.call","params":{"name":"runaway"}}"#)
        let call = try #require(try control.runningCalls(waitingUpTo: 10).first?["call"].intValue)
        return (daemon, control, caller, call)
    }

    /// The runaway's caller gets its console line, then -32001 with reason cancelled.
    static func expectCancelled(_ caller: RPCClient) throws {
        #expect(try caller.readMessage()?["method"] == "macro.console")
        #expect(try caller.readMessage()?["error"]["data"]["reason"] == "cancelled")
    }

    @Test func anAlreadyOpenConnectionListsAndCancelsASynchronousRunaway() throws {
        let daemon = try DaemonProcess(files: Self.files, config: Self.config)
        let control = try daemon.client()
        // Open and used before the runaway starts: its reads belong to the engine's loop.
        #expect(try control.call("progress.get") == ["inner": 0, "middle": 0, "outer": 0])
        let caller = try daemon.client()
        try caller.send(raw: #"{"jsonrpc":"2.0","id":1,"method":"macro.call","params":{"name":"runaway"}}"#)
        let running = try control.runningCalls(waitingUpTo: 10)
        #expect(running.map { $0["name"] } == ["runaway"])
        let call = try #require(running.first?["call"].intValue)
        // Committed values while the engine is busy, to a connection with nothing on it.
        #expect(try control.call("progress.get") == ["inner": 0, "middle": 0, "outer": 0])
        #expect(try control.call("macro.cancel", ["call": .number(Double(call))]) == ["call": .number(Double(call)), "cancelled": true])
        // The busy macro's console line, written while the connection was held, comes first.
        let console = try #require(try caller.readMessage())
        #expect(console["method"] == "macro.console")
        #expect(console["params"]["message"] == "spinning")
        let reply = try #require(try caller.readMessage())
        #expect(reply["id"] == 1)
        #expect(reply["error"]["code"] == -32001)
        #expect(reply["error"]["data"]["reason"] == "cancelled")
        #expect(try control.call("macro.running") == [])
        #expect(try control.call("progress.get") == ["inner": 0, "middle": 0, "outer": 0])
        // Stopped by the watchdog in-process: no engine restart.
        #expect(!daemon.log.contains("restarting the engine"), "\(daemon.log)")
    }

    @Test func requestsSentWhileTheEngineIsBusyAreAnsweredInOrderAfterIt() throws {
        let daemon = try DaemonProcess(files: Self.files, config: Self.config)
        let control = try daemon.client()
        let other = try daemon.client()
        #expect(try other.call("macro.call", ["name": "add", "args": [1]]) == 1)
        let caller = try daemon.client()
        try caller.send(raw: #"{"jsonrpc":"2.0","id":1,"method":"macro.call","params":{"name":"runaway"}}"#)
        let call = try #require(try control.runningCalls(waitingUpTo: 10).first?["call"].intValue)
        // Pipelined while the engine is busy: a call, a progress.get cut in two (its second half
        // sent after the control thread has read the first), a control request, another call.
        try other.send(
            bytes: Array(#"{"jsonrpc":"2.0","id":10,"method":"macro.call","params":{"name":"add","args":[1]}}"#.utf8) + [10]
                + Array(#"{"jsonrpc":"2.0","id":11,"meth"#.utf8))
        // macro.running is answered during the runaway, so the first half has been read by then.
        #expect(try control.call("macro.running").arrayValue?.count == 1)
        try other.send(raw: #"od":"progress.get"}"#)
        try other.send(raw: #"{"jsonrpc":"2.0","id":12,"method":"macro.running"}"#)
        try other.send(raw: #"{"jsonrpc":"2.0","id":13,"method":"macro.call","params":{"name":"add","args":[2]}}"#)
        // The control request is answered while the runaway still runs, ahead of the others.
        let running = try #require(try other.readMessage())
        #expect(running["id"] == 12)
        #expect(running["result"].arrayValue?.map { $0["call"] } == [.number(Double(call))])
        #expect(try control.call("macro.cancel", ["call": .number(Double(call))])["cancelled"] == true)
        try Self.expectCancelled(caller)
        // The rest in the order sent, each seeing the ones before it; the runaway's write to
        // outer was rolled back.
        var replies: [MacroValue] = []
        for _ in 0..<3 { replies.append(try #require(try other.readMessage())) }
        #expect(replies.map { $0["id"] } == [10, 11, 13])
        #expect(replies[0]["result"] == 2)
        #expect(replies[1]["result"] == ["inner": 2, "middle": 0, "outer": 0])
        #expect(replies[2]["result"] == 4)
    }

    @Test func aClientThatLeavesWhileTheEngineIsBusyLeavesNothingBehind() throws {
        let (daemon, control, caller, call) = try Self.startRunaway()
        do {
            let leaving = try daemon.client()
            try leaving.send(raw: #"{"jsonrpc":"2.0","id":5,"method":"macro.call","params":{"name":"add","args":[1]}}"#)
            // Read by the control thread (macro.running is answered after it), then gone.
            #expect(try control.call("macro.running").arrayValue?.count == 1)
        }
        #expect(try control.call("macro.cancel", ["call": .number(Double(call))])["cancelled"] == true)
        try Self.expectCancelled(caller)
        // The departed client's call still ran (it was read before it left), and the daemon serves on.
        let fresh = try daemon.client()
        #expect(try fresh.call("macro.call", ["name": "add", "args": [1]]) == 2)
        #expect(try fresh.call("engine.status")["connections"] == 3)
    }

    /// `echo '{"method":"macro.cancel",...}' | socat - UNIX-CONNECT:...`: a client connected
    /// while the engine is busy sends a cancel, closes its sending side and waits for the reply
    /// (owed until the call stops: the client is not taken for one that hung up).
    @Test func aNewClientThatCancelsAndHalfClosesGetsItsReply() throws {
        let (daemon, control, caller, call) = try Self.startRunaway()
        let canceller = try daemon.client()
        canceller.setReceiveTimeout(seconds: 10)
        try canceller.send(raw: #"{"jsonrpc":"2.0","id":9,"method":"macro.cancel","params":{"call":\#(call)}}"#)
        canceller.shutdownWrite()
        #expect(try canceller.readMessage() == ["jsonrpc": "2.0", "id": 9, "result": ["call": .number(Double(call)), "cancelled": true]])
        try Self.expectCancelled(caller)
        #expect(try control.call("macro.running") == [])
    }
}
