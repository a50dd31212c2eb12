import MacroBase
import MacroRPC
import Testing

/// The codec both sides use: what a client encodes, the daemon's parser reads back exactly, and
/// what the daemon answers, the client's reader classifies exactly. No engine is involved: this
/// target links MacroRPC and MacroBase only.
@Suite("JSON-RPC codec: client and daemon halves")
struct RPCCodecTests {
    @Test func aClientRequestIsTheRequestTheDaemonParses() throws {
        let params: MacroValue = ["name": "bump", "args": ["inner", 2.5], "timeoutMs": 100]
        let message = RPCCodec.request(id: RPCID(json: "7"), method: "macro.call", params: params)
        #expect(message.text == #"{"jsonrpc":"2.0","id":7,"method":"macro.call","params":{"name":"bump","args":["inner",2.5],"timeoutMs":100}}"#)
        guard case .single(.success(let request)) = RPCCodec.parse(Array(message.text.utf8)) else {
            Issue.record("the daemon did not read \(message.text) as one request")
            return
        }
        #expect(request.id == RPCID(json: "7"))
        #expect(request.method == "macro.call")
        #expect(request.params == params)
        #expect(Array(request.params.objectValue?.keys ?? []) == ["name", "args", "timeoutMs"])
    }

    @Test func aRequestWithoutParamsHasNoParamsMember() throws {
        let message = RPCCodec.request(id: RPCID(json: "1"), method: "progress.get", params: nil)
        #expect(message.text == #"{"jsonrpc":"2.0","id":1,"method":"progress.get"}"#)
        guard case .single(.success(let request)) = RPCCodec.parse(Array(message.text.utf8)) else {
            Issue.record("not one request: \(message.text)")
            return
        }
        #expect(request.params == .undefined)
    }

    @Test func aMethodNameIsEscapedAndReadBackAsWritten() throws {
        let method = "odd \"name\"\n\u{e9}"
        let message = RPCCodec.request(id: RPCID(json: #""a""#), method: method, params: [])
        guard case .single(.success(let request)) = RPCCodec.parse(Array(message.text.utf8)) else {
            Issue.record("not one request: \(message.text)")
            return
        }
        #expect(request.method == method)
        #expect(request.id == RPCID(json: #""a""#))
        #expect(request.params == [])
    }

    @Test func theDaemonsResultIsTheClientsResult() throws {
        let reply = RPCCodec.response(id: RPCID(json: "3"), result: ["inner": 1.5, "middle": 0, "outer": 10])
        let incoming = RPCCodec.incoming(try MacroValue(jsonText: reply.text))
        #expect(incoming == .response(id: 3, .success(["inner": 1.5, "middle": 0, "outer": 10])))
        // `undefined` goes out as null.
        let nothing = RPCCodec.response(id: RPCID(json: "4"), result: .undefined)
        #expect(nothing.text == #"{"jsonrpc":"2.0","id":4,"result":null}"#)
        #expect(RPCCodec.incoming(try MacroValue(jsonText: nothing.text)) == .response(id: 4, .success(.null)))
    }

    @Test func theDaemonsErrorIsTheClientsErrorWithItsData() throws {
        let error = RPCError(MacroError(code: .threw, message: "boom", errorName: "Error", macro: "boom", file: "boom.js", line: 4, column: 9))
        let reply = RPCCodec.response(id: RPCID(json: "5"), error: error)
        guard case .response(let id, .failure(let read)) = RPCCodec.incoming(try MacroValue(jsonText: reply.text)) else {
            Issue.record("not a failed response: \(reply.text)")
            return
        }
        #expect(id == 5)
        #expect(read == error)
        #expect(read.code == RPCError.macroThrew)
        #expect(read.data?["line"] == 4)
        #expect(read.data?["column"] == 9)
        // Without data, the error has none (not `.some(.undefined)`).
        #expect(RPCError(json: ["code": -32601, "message": "Method not found"])?.data == nil)
        // A line macrod could not read is answered under id null.
        let unreadable = RPCCodec.response(id: .null, error: RPCError(code: RPCError.parseError, message: "Parse error"))
        #expect(
            RPCCodec.incoming(try MacroValue(jsonText: unreadable.text))
                == .response(id: .null, .failure(RPCError(code: RPCError.parseError, message: "Parse error"))))
    }

    @Test func notificationsAreNotResponses() throws {
        let note = RPCCodec.notification("progress.changed", ["inner": 2, "seq": 9])
        #expect(
            RPCCodec.incoming(try MacroValue(jsonText: note.text))
                == .notification(["jsonrpc": "2.0", "method": "progress.changed", "params": ["inner": 2, "seq": 9]]))
        let console = RPCCodec.consoleNotification(id: RPCID(json: "12"), call: 3, level: "warn", message: "careful")
        guard case .notification(let message) = RPCCodec.incoming(try MacroValue(jsonText: console.text)) else {
            Issue.record("not a notification: \(console.text)")
            return
        }
        #expect(message["method"] == "macro.console")
        #expect(message["params"] == ["id": 12, "call": 3, "level": "warn", "message": "careful"])
    }
}
