import Foundation
import MacroEngineCore
import MacroRPC
import MacroTestSupport
import Testing

/// Every method and every error code of the protocol, against a real macrod.
@Suite("macrod protocol")
struct ProtocolTests {
    static let files = [
        "bump.js": "function(channel, amount) { progress[channel] += amount; return progress[channel] }",
        "random.js": "function() { setInnerProgress(getInnerProgress() + 1); setMiddleProgress(getMiddleProgress() + 1); setOuterProgress(getOuterProgress() + 1) }",
        "fail.js": "function() {\n  progress.inner = 9;\n  throw new Error('nope');\n}",
        "spin.js": "function() { while (true) {} }",
        "broken.js": "function() {\n  return ;;(\n}",
        "nothing.js": "function() {}",
    ]

    func rpcError(_ body: () throws -> MacroValue) -> RPCError? {
        do {
            _ = try body()
            return nil
        } catch let error as RPCError {
            return error
        } catch {
            return RPCError(code: 0, message: "\(error)")
        }
    }

    @Test func callsListsSourcesAndProgress() throws {
        let daemon = try DaemonProcess(files: Self.files)
        let client = try daemon.client()
        #expect(try client.call("macro.call", ["name": "bump", "args": ["inner", 2.5]]) == 2.5)
        #expect(try client.call("macro.call", ["name": "nothing"]) == .null)
        #expect(try client.call("progress.get") == ["inner": 2.5, "middle": 0, "outer": 0])
        #expect(try client.call("progress.set", ["outer": 42, "middle": -1]) == ["inner": 2.5, "middle": 0, "outer": 10])
        let list = try #require(try client.call("macro.list").arrayValue)
        #expect(list.map { $0["name"].stringValue! } == ["broken", "bump", "fail", "nothing", "random", "spin"])
        #expect(list[0]["status"] == "error")
        #expect(list[0]["error"] == ["message": "SyntaxError: Unexpected token '}'", "line": 3, "column": 1])
        #expect(list[1] == ["name": "bump", "kind": "macro", "status": "ok", "file": .string(daemon.macros + "/bump.js"), "version": 1])
        #expect(try client.call("macro.source", ["name": "bump"]) == ["name": "bump", "source": .string(Self.files["bump.js"]!)])
        let status = try client.call("engine.status")
        #expect(status["version"] == .string(MacroEngineVersion.string))
        #expect(status["macros"] == ["ok": 5, "broken": 1])
        #expect(status["calls"] == 2)
        #expect(status["errors"] == 0)
    }

    @Test func macroErrorsCarryTheirCodesAndData() throws {
        let daemon = try DaemonProcess(files: Self.files)
        let client = try daemon.client()
        let threw = try #require(rpcError { try client.call("macro.call", ["name": "fail"]) })
        #expect(threw.code == -32000)
        #expect(threw.message == "Error: nope")
        #expect(
            threw.data == [
                "name": "fail", "message": "nope", "errorName": "Error", "file": .string(daemon.macros + "/fail.js"),
                "line": 3, "column": 18, "stack": .string("fail@\(daemon.macros)/fail.js:3:18"),
            ])
        // A call past its `timeoutMs` fails with -32001 and says why.
        let timeout = try #require(rpcError { try client.call("macro.call", ["name": "spin", "timeoutMs": 200]) })
        #expect(timeout.code == -32001)
        #expect(timeout.message == "timed out after 200 ms")
        #expect(timeout.data?["reason"] == "timeout")
        let missing = try #require(rpcError { try client.call("macro.call", ["name": "ghost"]) })
        #expect(missing.code == -32002)
        let broken = try #require(rpcError { try client.call("macro.call", ["name": "broken"]) })
        #expect(broken.code == -32003)
        #expect(broken.data?["line"] == 3)
        let eval = try #require(rpcError { try client.call("engine.eval", ["source": "1 + 1"]) })
        #expect(eval.code == -32004)
        let unknown = try #require(rpcError { try client.call("macro.explode") })
        #expect(unknown.code == -32601)
        #expect(unknown.message == "Method not found: macro.explode")
        // The daemon is still fine.
        #expect(try client.call("macro.call", ["name": "bump", "args": ["outer", 1]]) == 1)
    }

    static let badParams: [(String, MacroValue, String)] = [
        ("macro.call", ["name": 7], "Invalid params: name must be a string"),
        ("macro.call", ["name": "bump", "args": "inner"], "Invalid params: args must be an array"),
        ("macro.call", ["name": "bump", "timeoutMs": -5], "Invalid params: timeoutMs must be a whole number of milliseconds from 1 to 86400000"),
        ("macro.call", [:], "Invalid params: name is required"),
        ("macro.source", ["name": "../etc/passwd"], "Invalid params: name '../etc/passwd' is not a valid macro name (letters, digits, _ or $; no path separators)"),
        ("progress.set", ["inner": "high"], "Invalid params: 'inner' must be a finite number"),
        ("progress.set", ["sideways": 1], "Invalid params: unknown channel 'sideways' (channels: inner, middle, outer)"),
        ("subscribe", ["events": ["weather"]], "Invalid params: events unknown event \"weather\" (events: progress, macros, log, runs)"),
        ("subscribe", [:], "Invalid params: events must be an array such as [\"progress\"]"),
        ("macro.list", ["positional"], "Invalid params: macro.list takes no params (send none, {} or [])"),
    ]

    @Test(arguments: badParams)
    func wrongParamsGetInvalidParams(_ method: String, _ params: MacroValue, _ message: String) throws {
        let daemon = try DaemonProcess(files: Self.files)
        let client = try daemon.client()
        let error = try #require(rpcError { try client.call(method, params) })
        #expect(error.code == -32602)
        #expect(error.message == message)
        #expect(try client.call("progress.get") == ["inner": 0, "middle": 0, "outer": 0])
    }

    @Test func malformedLinesGetTheirErrorsAndTheConnectionGoesOn() throws {
        let daemon = try DaemonProcess(files: Self.files)
        let client = try daemon.client()
        func reply(_ line: [UInt8]) throws -> MacroValue {
            try client.send(bytes: line + [10])
            return try #require(try client.readMessage())
        }
        func reply(_ line: String) throws -> MacroValue { try reply(Array(line.utf8)) }
        #expect(try reply("{nope")["error"]["code"] == -32700)
        #expect(try reply([0x7b, 0xff, 0xfe, 0x7d])["error"] == ["code": -32700, "message": "Parse error: the line is not valid UTF-8"])
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        #expect(try reply(deep)["error"] == ["code": -32700, "message": "Parse error: JSON nested deeper than 128 levels"])
        #expect(try reply("42")["error"]["code"] == -32600)
        #expect(
            try reply(#"{"id": 1, "method": "progress.get"}"#) == [
                "jsonrpc": "2.0", "id": 1, "error": ["code": -32600, "message": "Invalid Request: \"jsonrpc\" must be \"2.0\""],
            ])
        #expect(try reply(#"{"jsonrpc": "2.0", "id": {"x": 1}, "method": "progress.get"}"#)["error"]["code"] == -32600)
        #expect(try reply(#"{"jsonrpc": "2.0", "id": 3, "method": 5}"#)["id"] == 3)
        #expect(try reply(#"{"jsonrpc": "2.0", "id": "s", "method": "progress.get", "params": 5}"#)["error"]["code"] == -32600)
        #expect(try reply("[]")["error"] == ["code": -32600, "message": "Invalid Request: empty batch"])
        // A batch: replies in order, none for the notification, an error for the bad element.
        let batch = try reply(
            #"[{"jsonrpc":"2.0","id":"a","method":"progress.get"},{"jsonrpc":"2.0","method":"progress.set","params":{"inner":1}},7,{"jsonrpc":"2.0","id":"b","method":"progress.get"}]"#
        )
        #expect(
            batch == [
                ["jsonrpc": "2.0", "id": "a", "result": ["inner": 0, "middle": 0, "outer": 0]],
                ["jsonrpc": "2.0", "id": .null, "error": ["code": -32600, "message": "Invalid Request: expected a JSON object"]],
                ["jsonrpc": "2.0", "id": "b", "result": ["inner": 1, "middle": 0, "outer": 0]],
            ])
        // A notification gets no reply: the next line's reply is the next thing read.
        try client.send(raw: #"{"jsonrpc":"2.0","method":"progress.set","params":{"outer":2}}"#)
        #expect(try reply(#"{"jsonrpc":"2.0","id":9,"method":"progress.get"}"#) == ["jsonrpc": "2.0", "id": 9, "result": ["inner": 1, "middle": 0, "outer": 2]])
        #expect(try client.call("engine.status")["errors"] == 0)
    }

    @Test func anOverlongLineClosesOnlyThatConnection() throws {
        let daemon = try DaemonProcess(files: Self.files, config: "max_line_bytes: 4096\n")
        let other = try daemon.client()
        let client = try daemon.client()
        try client.send(raw: #"{"jsonrpc":"2.0","id":1,"method":"macro.call","params":{"name":""# + String(repeating: "x", count: 10_000) + "\"}}")
        let reply = try #require(try client.readMessage())
        #expect(reply["error"] == ["code": -32600, "message": "Invalid Request: line longer than 4096 bytes (config: max_line_bytes); closing"])
        #expect(try client.readLine() == nil)
        #expect(try other.call("progress.get") == ["inner": 0, "middle": 0, "outer": 0])
    }

    @Test func halfClosedAndVanishingClientsCostNothing() throws {
        let daemon = try DaemonProcess(files: Self.files)
        // Half-close after sending: the reply still comes, then the daemon closes.
        let half = try daemon.client()
        try half.send(raw: #"{"jsonrpc":"2.0","id":1,"method":"macro.call","params":{"name":"bump","args":["inner",1]}}"#)
        half.shutdownWrite()
        #expect(try half.readMessage()?["result"] == 1)
        #expect(try half.readLine() == nil)
        // Disconnect in the middle of a call, and connect without sending anything.
        for _ in 0..<20 {
            let gone = try daemon.client()
            try gone.send(raw: #"{"jsonrpc":"2.0","id":1,"method":"macro.call","params":{"name":"spin","timeoutMs":20}}"#)
            _ = try daemon.client()
        }
        let client = try daemon.client()
        #expect(try client.call("progress.get")["inner"] == 1)
        // A client that connected while a spin ran is adopted by the engine's loop when it ends
        // (io_thread: engine); those that hung up are then closed: at most 5 s for all of them
        // (asked: a close is announced to nobody else).
        var connections = try client.call("engine.status")["connections"]
        _ = try eventually(timeout: .seconds(5)) { () throws -> Bool? in
            connections = try client.call("engine.status")["connections"]
            return connections == 1 ? true : nil
        }
        #expect(connections == 1)
    }

    @Test func evalWorksWhenTheDevelopmentSwitchIsOn() throws {
        let daemon = try DaemonProcess(files: Self.files, config: "engine_eval: true\n")
        let client = try daemon.client()
        #expect(try client.call("engine.eval", ["source": "getInnerProgress() + 40 + 2"]) == 42)
        let error = try #require(rpcError { try client.call("engine.eval", ["source": "throw new TypeError('x')"]) })
        #expect(error.code == -32000)
    }
}

/// Guarantee 9 on the socket: lines that are JSON only in part, or JSON with surprises.
@Suite("macrod hostile lines")
struct HostileLineTests {
    @Test func hugeNumbersDuplicateKeysAndHugeArgumentsAreHandled() throws {
        let daemon = try DaemonProcess(files: ["len.js": "function (s) { return s.length }", "id.js": "function (x) { return x }"])
        let client = try daemon.client()
        func reply(_ line: String) throws -> MacroValue {
            try client.send(raw: line)
            return try #require(try client.readMessage())
        }
        // Valid JSON whatever a double can hold: the id is echoed as written, and a number past a
        // double's range reads as Infinity, as JSON.parse reads it.
        try client.send(raw: #"{"jsonrpc":"2.0","id":1e400,"method":"progress.get"}"#)
        #expect(try client.readLine() == #"{"jsonrpc":"2.0","id":1e400,"result":{"inner":0,"middle":0,"outer":0}}"#)
        try client.send(raw: #"{"jsonrpc":"2.0","id":-2E+999,"method":"macro.call","params":{"name":"id","args":[1e400]}}"#)
        #expect(try client.readLine() == #"{"jsonrpc":"2.0","id":-2E+999,"result":null}"#)
        // A repeated key: the last value counts, as in JSON.parse.
        #expect(try reply(#"{"jsonrpc":"2.0","id":1,"id":2,"method":"progress.get"}"#)["id"] == 2)
        #expect(
            try reply(#"{"jsonrpc":"2.0","id":3,"method":"macro.call","params":{"name":"id","args":[1.7976931348623157e308]}}"#)["result"]
                == .number(1.7976931348623157e308))
        #expect(
            try reply(#"{"jsonrpc":"2.0","id":4,"method":"macro.call","params":{"name":"id","args":[{"b":1,"a":[true,null,"\u00e9"]}]}}"#)["result"]
                == ["b": 1, "a": [true, .null, "é"]])
        let big = String(repeating: "x", count: 900_000)
        #expect(try reply(#"{"jsonrpc":"2.0","id":5,"method":"macro.call","params":{"name":"len","args":["\#(big)"]}}"#)["result"] == 900_000)
        #expect(try reply(#"{"jsonrpc":"2.0","id":6,"method":"macro.call","params":{"name":"id","args":"nope"}}"#)["error"]["code"] == -32602)
        #expect(try client.call("progress.get") == ["inner": 0, "middle": 0, "outer": 0])
    }
}

/// Names every object answers to, and the engine's prefix, name no macro.
@Suite("Macro names that would shadow object properties")
struct ShadowingNameTests {
    @Test(arguments: ["__proto__", "toString", "constructor", "hasOwnProperty", "__macroengine_invoke"])
    func aSaveUnderSuchANameIsRefusedAndNothingIsWritten(_ name: String) throws {
        let daemon = try DaemonProcess()
        let error = try #require(throws: RPCError.self) {
            try daemon.client().call("macro.save", ["name": .string(name), "source": "function() { return 1 }"])
        }
        #expect(error.code == RPCError.invalidParams)
        #expect(
            error.message.contains(name.hasPrefix("__macroengine") ? "reserved for the engine's own functions" : "is a property of every JavaScript object"), "\(error.message)")
        #expect(!FileManager.default.fileExists(atPath: daemon.macros + "/\(name).js"))
    }
}
