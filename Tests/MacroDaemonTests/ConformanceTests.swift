import Foundation
import MacroEngineCore
import MacroRPC
import MacroTestSupport
import Testing

/// JSON-RPC 2.0 as real client libraries rely on it, checked on raw lines against a real macrod:
/// ids byte for byte, method lookup before params, `[]` params, unknown keys, macro names, BOM.
@Suite("macrod JSON-RPC conformance")
struct ConformanceTests {
    static let files = [
        "bump.js": "function(channel, amount) { progress[channel] += amount; return progress[channel] }",
        "nothing.js": "function() {}",
    ]

    /// Sends `line` and returns the next line the daemon writes, as text.
    static func exchange(_ client: RPCClient, _ line: String) throws -> String {
        try client.send(raw: line)
        return try #require(try client.readLine())
    }

    static let ids = [
        "1152921504606846977", "1152921504606846976", "9007199254740993", "1732260000123456789", "-1152921504606846977",
        "1e3", "1E+3", "-0", "1.50", "0.1000", "-12.5e-3", "0", "1e-400",
        #""s""#, #""\u00e9""#, #""a\"b\\c""#, #""1152921504606846977""#, #""""#, "null",
    ]

    @Test(arguments: ids)
    func everyIDComesBackExactlyAsWritten(_ id: String) throws {
        let daemon = try DaemonProcess(files: Self.files)
        let client = try daemon.client()
        #expect(
            try Self.exchange(client, #"{"jsonrpc":"2.0","id":\#(id),"method":"progress.get"}"#)
                == #"{"jsonrpc":"2.0","id":\#(id),"result":{"inner":0,"middle":0,"outer":0}}"#)
        // Errors too, before the method is known and after.
        #expect(
            try Self.exchange(client, #"{"jsonrpc":"2.0","id":\#(id),"method":"no.such"}"#)
                == #"{"jsonrpc":"2.0","id":\#(id),"error":{"code":-32601,"message":"Method not found: no.such"}}"#)
        #expect(
            try Self.exchange(client, #"{"jsonrpc":"1.0","id":\#(id),"method":"progress.get"}"#)
                == #"{"jsonrpc":"2.0","id":\#(id),"error":{"code":-32600,"message":"Invalid Request: \"jsonrpc\" must be \"2.0\""}}"#)
    }

    @Test func pipelinedRequestsWithNeighbouringBigIDsStayDistinct() throws {
        let daemon = try DaemonProcess(files: Self.files)
        let client = try daemon.client()
        // Both ids are the same double (2^60): only the raw text tells them apart.
        try client.send(
            raw: #"{"jsonrpc":"2.0","id":1152921504606846977,"method":"macro.call","params":{"name":"bump","args":["inner",1]}}"#
                + "\n" + #"{"jsonrpc":"2.0","id":1152921504606846976,"method":"macro.call","params":{"name":"bump","args":["inner",1]}}"#)
        #expect(try client.readLine() == #"{"jsonrpc":"2.0","id":1152921504606846977,"result":1}"#)
        #expect(try client.readLine() == #"{"jsonrpc":"2.0","id":1152921504606846976,"result":2}"#)
        // In a batch, each element keeps its own id.
        #expect(
            try Self.exchange(
                client,
                #"[{"jsonrpc":"2.0","id":1e3,"method":"progress.get"},7,{"jsonrpc":"2.0","id":-0,"method":"nope"},{"jsonrpc":"2.0","method":"progress.get"},{"jsonrpc":"2.0","id":"\u0041","method":"macro.call","params":{"name":"bump","args":["inner",1]}}]"#
            )
                == #"[{"jsonrpc":"2.0","id":1e3,"result":{"inner":2,"middle":0,"outer":0}},{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: expected a JSON object"}},{"jsonrpc":"2.0","id":-0,"error":{"code":-32601,"message":"Method not found: nope"}},{"jsonrpc":"2.0","id":"\u0041","result":3}]"#
        )
    }

    static let unknownMethodParams = [#"[]"#, #"[1, 2]"#, #"{}"#, #"{"name": "bump"}"#, #"{"argz": 1}"#, #"[{"name": "bump"}]"#]

    @Test(arguments: unknownMethodParams)
    func anUnknownMethodIsMethodNotFoundWhateverItsParams(_ params: String) throws {
        let daemon = try DaemonProcess(files: Self.files)
        let client = try daemon.client()
        #expect(
            try Self.exchange(client, #"{"jsonrpc":"2.0","id":1,"method":"macro.explode","params":\#(params)}"#)
                == #"{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found: macro.explode"}}"#)
        // As a notification it gets no reply: the next reply read is the next request's.
        try client.send(raw: #"{"jsonrpc":"2.0","method":"macro.explode","params":\#(params)}"#)
        #expect(
            try Self.exchange(client, #"{"jsonrpc":"2.0","id":2,"method":"progress.get"}"#)
                == #"{"jsonrpc":"2.0","id":2,"result":{"inner":0,"middle":0,"outer":0}}"#)
    }

    @Test func emptyPositionalParamsWorkForMethodsWithoutParams() throws {
        let daemon = try DaemonProcess(files: Self.files)
        let client = try daemon.client()
        #expect(
            try Self.exchange(client, #"{"jsonrpc":"2.0","id":1,"method":"progress.get","params":[]}"#)
                == #"{"jsonrpc":"2.0","id":1,"result":{"inner":0,"middle":0,"outer":0}}"#)
        #expect(
            try Self.exchange(client, #"{"jsonrpc":"2.0","id":2,"method":"macro.running","params":[]}"#)
                == #"{"jsonrpc":"2.0","id":2,"result":[]}"#)
        let list = try MacroValue(jsonText: try Self.exchange(client, #"{"jsonrpc":"2.0","id":3,"method":"macro.list","params":[]}"#))
        #expect(list["result"].arrayValue?.compactMap { $0["name"].stringValue } == ["bump", "nothing"])
        for method in ["engine.status", "macro.types", "log.recent", "progress.set"] {
            let reply = try MacroValue(jsonText: try Self.exchange(client, #"{"jsonrpc":"2.0","id":4,"method":"\#(method)","params":[]}"#))
            #expect(reply["error"] == .undefined, "\(method): \(reply.jsonText())")
            #expect(reply["result"] != .undefined)
        }
    }

    static let positional: [(String, String, String)] = [
        ("progress.get", "[1]", "Invalid params: progress.get takes no params (send none, {} or [])"),
        ("macro.list", #"["bump"]"#, "Invalid params: macro.list takes no params (send none, {} or [])"),
        ("macro.call", #"["bump", ["inner", 1]]"#, "Invalid params: macro.call takes named params (an object with name, args, timeoutMs, announce, console), not an array"),
        ("macro.save", #"["x", "function() {}"]"#, "Invalid params: macro.save takes named params (an object with name, source), not an array"),
        ("progress.set", "[5]", #"Invalid params: progress.set takes named params (an object such as {"inner": 5}), not an array"#),
        ("macro.cancel", "[1]", "Invalid params: macro.cancel takes named params (an object with call), not an array"),
        ("macro.call", "[]", "Invalid params: name is required"),
    ]

    @Test(arguments: positional)
    func otherPositionalParamsAreInvalidParams(_ method: String, _ params: String, _ message: String) throws {
        let daemon = try DaemonProcess(files: Self.files)
        let client = try daemon.client()
        #expect(
            try Self.exchange(client, #"{"jsonrpc":"2.0","id":1,"method":"\#(method)","params":\#(params)}"#)
                == #"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"\#(message.replacingOccurrences(of: "\"", with: "\\\""))"}}"#)
    }

    /// Every method that checks its keys, with otherwise valid params plus one unknown key.
    static let unknownKeys: [(String, MacroValue, String)] = [
        ("macro.call", ["name": "bump", "argz": [1]], "unknown param 'argz' (macro.call takes name, args, timeoutMs, announce, console)"),
        ("macro.call", ["name": "bump", "args": ["inner", 1], "timeout": 5], "unknown param 'timeout' (macro.call takes name, args, timeoutMs, announce, console)"),
        ("macro.list", ["verbose": true], "unknown param 'verbose' (macro.list takes no params)"),
        ("macro.source", ["name": "bump", "file": "x"], "unknown param 'file' (macro.source takes name)"),
        ("macro.save", ["name": "other", "source": "function() {}", "mode": 420], "unknown param 'mode' (macro.save takes name, source)"),
        ("macro.delete", ["name": "nothing", "force": true], "unknown param 'force' (macro.delete takes name)"),
        ("macro.types", ["name": "bump"], "unknown param 'name' (macro.types takes no params)"),
        ("macro.running", ["all": true], "unknown param 'all' (macro.running takes no params)"),
        ("macro.cancel", ["call": 1, "reason": "x"], "unknown param 'reason' (macro.cancel takes call)"),
        ("progress.get", ["channel": "inner"], "unknown param 'channel' (progress.get takes no params)"),
        ("progress.set", ["inner": 1, "sideways": 1], "unknown channel 'sideways' (channels: inner, middle, outer)"),
        ("subscribe", ["events": ["log"], "filter": "x"], "unknown param 'filter' (subscribe takes events)"),
        ("unsubscribe", ["event": ["log"]], "unknown param 'event' (unsubscribe takes events)"),
        ("engine.status", ["x": 1], "unknown param 'x' (engine.status takes no params)"),
        ("engine.eval", ["source": "1", "file": "x"], "unknown param 'file' (engine.eval takes source, timeoutMs, call)"),
        ("log.recent", ["limit": 1, "level": "error"], "unknown param 'level' (log.recent takes limit)"),
        ("macro.stats", ["name": "bump", "sort": "calls"], "unknown param 'sort' (macro.stats takes name, reset)"),
        ("macro.profile", ["name": "bump", "interval": 1], "unknown param 'interval' (macro.profile takes name, args, runs, timeoutMs)"),
    ]

    @Test(arguments: unknownKeys)
    func anUnknownParamKeyIsInvalidParamsNamingIt(_ method: String, _ params: MacroValue, _ message: String) throws {
        let daemon = try DaemonProcess(files: Self.files, config: "engine_eval: true\n")
        let client = try daemon.client()
        let error = try #require(throws: RPCError.self) { try client.call(method, params) }
        #expect(error.code == -32602)
        #expect(error.message == "Invalid params: " + message)
        // Nothing ran: the files and the values are as they were.
        #expect(try client.call("progress.get") == ["inner": 0, "middle": 0, "outer": 0])
        #expect(try client.call("macro.list").arrayValue?.compactMap { $0["name"].stringValue } == ["bump", "nothing"])
    }

    static let badNames: [(String, String)] = [
        ("macro.call", "../etc"), ("macro.call", "a/b"), ("macro.call", ""), ("macro.call", "1x"), ("macro.call", "class"),
        ("macro.source", "../etc"), ("macro.source", "a b"),
        ("macro.save", "../etc"), ("macro.save", "lib/x"),
        ("macro.delete", "../bump"), ("macro.delete", "with.dot"),
        ("macro.stats", "../bump"),
    ]

    @Test(arguments: badNames)
    func aBadMacroNameIsInvalidParamsForEveryMethodTakingOne(_ method: String, _ name: String) throws {
        let daemon = try DaemonProcess(files: Self.files)
        let client = try daemon.client()
        var params: OrderedFields = ["name": .string(name)]
        if method == "macro.save" { params["source"] = "function() {}" }
        let error = try #require(throws: RPCError.self) { try client.call(method, .object(params)) }
        #expect(error.code == -32602)
        #expect(error.message == "Invalid params: name '\(name)' is not a valid macro name (letters, digits, _ or $; no path separators)")
    }

    @Test(arguments: ["macro.call", "macro.save"])
    func anEngineGlobalIsNotAMacroName(_ method: String) throws {
        let daemon = try DaemonProcess(files: Self.files)
        let client = try daemon.client()
        for name in ["Math", "progress", "setInnerProgress", "console"] {
            var params: OrderedFields = ["name": .string(name)]
            if method == "macro.save" { params["source"] = "function() {}" }
            let error = try #require(throws: RPCError.self) { try client.call(method, .object(params)) }
            #expect(error.code == -32602)
            #expect(error.message == "Invalid params: name '\(name)' is not a valid macro name: it is an engine global")
        }
        #expect(!FileManager.default.fileExists(atPath: daemon.macros + "/Math.js"))
        // A valid name that is simply missing is still -32002.
        let missing = try #require(throws: RPCError.self) { try client.call("macro.call", ["name": "ghost"]) }
        #expect(missing.code == -32002)
    }

    @Test func aByteOrderMarkAtTheStartOfALineIsIgnored() throws {
        let daemon = try DaemonProcess(files: Self.files)
        let client = try daemon.client()
        let bom: [UInt8] = [0xEF, 0xBB, 0xBF]
        try client.send(bytes: bom + Array(#"{"jsonrpc":"2.0","id":1,"method":"macro.call","params":{"name":"bump","args":["outer",2]}}"#.utf8) + [10])
        #expect(try client.readLine() == #"{"jsonrpc":"2.0","id":1,"result":2}"#)
        // A batch after a BOM, a CRLF line after a BOM, and a line holding only a BOM (no reply).
        try client.send(bytes: bom + Array(#"[{"jsonrpc":"2.0","id":2,"method":"progress.get"}]"#.utf8) + [10])
        #expect(try client.readLine() == #"[{"jsonrpc":"2.0","id":2,"result":{"inner":0,"middle":0,"outer":2}}]"#)
        try client.send(bytes: bom + [13, 10] + bom + Array(#"{"jsonrpc":"2.0","id":3,"method":"progress.get"}"#.utf8) + [13, 10])
        #expect(try client.readLine() == #"{"jsonrpc":"2.0","id":3,"result":{"inner":0,"middle":0,"outer":2}}"#)
        // Only at the start: a BOM elsewhere is still not JSON.
        try client.send(bytes: Array(#"{"jsonrpc":"2.0","id":4,"#.utf8) + bom + Array(#""method":"progress.get"}"#.utf8) + [10])
        let reply = try MacroValue(jsonText: try #require(try client.readLine()))
        #expect(reply["error"]["code"] == -32700)
        #expect(try client.call("engine.status")["errors"] == 0)
    }
}
