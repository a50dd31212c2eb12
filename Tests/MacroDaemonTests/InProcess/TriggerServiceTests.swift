import Foundation
import MacroBase
import MacroDaemonTesting
import MacroEngineCore
import MacroRPC
import MacroTestSupport
import Testing

/// Triggers through macrod's methods: `macro.trigger`, `macro.triggers`, the `macro.triggered`
/// notification, statistics.
@Suite("Triggers in macrod, in-process")
struct TriggerServiceTests {
    @Test func aTriggerFiredByHandRunsNotifiesAndCounts() async throws {
        let directory = TemporaryDirectory(prefix: "in-process")
        try FileManager.default.createDirectory(atPath: directory.url("macros"), withIntermediateDirectories: true)
        try directory.write(
            "macros/tick.js", "export const triggers = [{ every: \"1h\" }];\nexport default function tick(event) { progress.inner += event.by || 1; return event.kind; }\n")
        try directory.write("macros/plain.js", "function plain() { return 1; }")
        let config = MacroConfig(macrosDirectory: directory.url("macros"), stateFile: directory.url("state.json"))
        let service = try InProcessService(config: config)
        let client = try await service.connect()
        _ = try await client.call(.subscribe, ["events": ["macros"]], id: 1)
        try await client.request(.trigger, ["name": "tick", "event": ["by": 3, "kind": "ignored"]], id: 2)
        var reply: MacroValue = .null, note: MacroValue = .null
        for _ in 0..<2 {
            let message = try await client.next()
            if message["id"] == 2 { reply = message } else { note = message }
        }
        let call = try #require(reply["result"]["call"].intValue)
        #expect(reply["result"] == ["name": "tick", "outcome": "started", "call": .number(Double(call))])
        #expect(note["method"] == "macro.triggered")
        #expect(note["params"] == ["name": "tick", "kind": "manual", "call": .number(Double(call)), "event": ["by": 3, "kind": "manual"]])
        // The run starts as a task on the engine's loop after the reply; a request on the engine
        // lane runs after it.
        _ = try await client.call(.call, ["name": "plain"], id: 30)
        #expect(try await client.call(.progressGet, id: 3)["result"]["inner"] == 3)
        let status = try await client.call(.triggers, id: 4)["result"]
        #expect(status.arrayValue?.count == 1)
        #expect(status[0]["name"] == "tick")
        #expect(status[0]["fired"] == 1)
        #expect(status[0]["lastRun"]["result"] == "\"manual\"")
        #expect(status[0]["triggers"][0]["spec"] == ["every": "1h"])
        let stats = try await client.call(.stats, ["name": "tick"], id: 5)["result"]
        #expect(stats[0]["calls"] == 1)
        // A macro without triggers can be fired too; one that is not loaded cannot.
        #expect(try await client.call(.trigger, ["name": "plain"], id: 6)["result"]["outcome"] == "started")
        #expect(try await client.call(.trigger, ["name": "nope"], id: 7)["error"]["code"] == .number(Double(RPCError.noSuchMacro)))
        #expect(try await client.call(.trigger, ["name": "tick", "event": [1]], id: 8)["error"]["code"] == .number(Double(RPCError.invalidParams)))
        let engineStatus = try await client.call(.status, id: 9)["result"]["triggers"]
        #expect(engineStatus == ["macros": 1, "paused": 0, "fired": 1, "dropped": 0])
    }
}

/// `macro.call {console: false}`: a generic JSON-RPC client gets only its reply.
@Suite("macro.call without console notifications")
struct CallConsoleOptionTests {
    @Test func consoleFalseSendsOnlyTheReply() async throws {
        let directory = TemporaryDirectory(prefix: "in-process")
        try FileManager.default.createDirectory(atPath: directory.url("macros"), withIntermediateDirectories: true)
        try directory.write("macros/talk.js", "function talk() { console.log('hello'); return 1; }")
        let service = try InProcessService(config: MacroConfig(macrosDirectory: directory.url("macros"), stateFile: directory.url("state.json")))
        let client = try await service.connect()
        try await client.request(.call, ["name": "talk"], id: 1)
        #expect(try await client.next()["method"] == "macro.console")
        #expect(try await client.next()["result"] == 1)
        // The very next message after this request is its reply.
        try await client.request(.call, ["name": "talk", "console": false], id: 2)
        #expect(try await client.next() == ["jsonrpc": "2.0", "id": 2, "result": 1])
        #expect(try await client.call(.call, ["name": "talk", "console": "no"], id: 3)["error"]["code"] == .number(Double(RPCError.invalidParams)))
    }
}
