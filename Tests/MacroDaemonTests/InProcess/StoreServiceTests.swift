import Foundation
import MacroBase
import MacroDaemonTesting
import MacroEngineCore
import MacroRPC
import MacroTestSupport
import Testing

@testable import MacroDaemon

/// Through macrod's service in-process: a store survives a new version of its
/// macro and a restart from the journal, and is read and edited from outside.
@Suite("Stores through macrod's service")
struct StoreServiceTests {
    static let counter = """
        function counter() { const n = (store.get("count") ?? 0) + 1; store.set("count", n); return n }
        """

    private static func config(_ directory: TemporaryDirectory, limit: Int = MacroStore.defaultLimit) throws -> MacroConfig {
        var config = MacroConfig(macrosDirectory: directory.url("macros"), stateFile: directory.url("state.json"))
        config.storeLimitBytes = limit
        return config
    }

    private static func directory(_ files: [String: String]) throws -> TemporaryDirectory {
        let directory = TemporaryDirectory(prefix: "store-service")
        try FileManager.default.createDirectory(atPath: directory.url("macros"), withIntermediateDirectories: true)
        for (name, text) in files { _ = try directory.write("macros/\(name)", text) }
        return directory
    }

    @Test func theCountSurvivesANewVersionOfTheMacro() async throws {
        let directory = try Self.directory(["counter.js": Self.counter])
        let service = try InProcessService(config: try Self.config(directory))
        let client = try await service.connect()
        for expected in 1...3 { #expect(try await client.call(.call, ["name": "counter"])["result"] == .number(Double(expected))) }
        let saved = try await client.call(
            .save, ["name": "counter", "source": #"function counter() { const n = (store.get("count") ?? 0) + 10; store.set("count", n); return n }"#])
        #expect(saved["error"] == .undefined, "\(saved)")
        #expect(try await client.call(.call, ["name": "counter"])["result"] == 13)
    }

    @Test func aCallThatThrowsLeavesTheCountUnchanged() async throws {
        let directory = try Self.directory([
            "counter.js": Self.counter,
            "countThenThrow.js": #"function countThenThrow() { store.set("count", 99); throw new Error("no") }"#,
        ])
        let service = try InProcessService(config: try Self.config(directory))
        let client = try await service.connect()
        #expect(try await client.call(.call, ["name": "counter"])["result"] == 1)
        #expect(try await client.call(.call, ["name": "countThenThrow"])["error"]["code"] == .number(Double(RPCError.macroThrew)))
        #expect(try await client.call(.storeGet, ["name": "countThenThrow"])["result"]["entries"] == [:])
        #expect(try await client.call(.call, ["name": "counter"])["result"] == 2)
    }

    /// What an answered call wrote is in the journal before its reply leaves: a new process (after
    /// `kill -9`, or the stall restart's re-exec, neither of which saves anything) goes on counting.
    @Test func theCountIsJournaledBeforeTheReplyAndSurvivesARestart() async throws {
        let directory = try Self.directory(["counter.js": Self.counter])
        do {
            let service = try InProcessService(config: try Self.config(directory))
            let client = try await service.connect()
            for _ in 1...3 { _ = try await client.call(.call, ["name": "counter"]) }
            #expect(try directory.read("state.json.store.journal") == (1...3).map { #"[["counter","count",\#($0)]]"# + "\n" }.joined())
        }
        let service = try InProcessService(config: try Self.config(directory))
        var warnings: [StateWarning] = []
        _ = try service.environment.restoreState(warnings: &warnings)
        #expect(warnings.isEmpty)
        let client = try await service.connect()
        #expect(try await client.call(.call, ["name": "counter"])["result"] == 4)
    }

    @Test func aStoreIsReadAndEditedFromOutside() async throws {
        let directory = try Self.directory(["counter.js": Self.counter])
        let service = try InProcessService(config: try Self.config(directory, limit: 1024))
        let client = try await service.connect()
        #expect(try await client.call(.storeSet, ["name": "counter", "key": "count", "value": 41])["result"] == ["name": "counter", "key": "count", "bytes": 7])
        #expect(try await client.call(.storeSet, ["name": "counter", "key": "note", "value": ["a": [1, true]]])["result"]["bytes"] == 25)
        #expect(try await client.call(.call, ["name": "counter"])["result"] == 42)
        #expect(try await client.call(.storeGet, ["name": "counter", "key": "count"])["result"] == ["name": "counter", "key": "count", "value": 42])
        #expect(try await client.call(.storeGet, ["name": "counter", "key": "nope"])["result"] == ["name": "counter", "key": "nope"])
        #expect(
            try await client.call(.storeGet, ["name": "counter"])["result"] == [
                "name": "counter", "entries": ["count": 42, "note": ["a": [1, true]]], "bytes": 25, "limit": 1024,
            ])
        #expect(try await client.call(.storeList)["result"] == ["stores": [["name": "counter", "keys": 2, "bytes": 25]], "limit": 1024])
        #expect(try await client.call(.storeDelete, ["name": "counter", "key": "note"])["result"] == ["name": "counter", "key": "note", "deleted": true])
        #expect(try await client.call(.storeDelete, ["name": "counter", "key": "note"])["result"]["deleted"] == false)
        // Journaled like a macro's own change.
        #expect(try directory.read("state.json.store.journal").hasSuffix(#"[["counter","note"]]"# + "\n"))
        // And audited as an edit from outside, in order (a refused delete is no edit).
        let audit = try #require(try await client.call(.auditRecent, ["kind": "storeEdit"])["result"].arrayValue)
        #expect(audit.map { $0["details"]["op"] } == ["set", "set", "delete"], "\(audit)")
        #expect(audit.map { $0["details"]["key"] } == ["count", "note", "note"])
        #expect(audit.first?["name"] == "counter")
        // A value is recorded by its size and hash, never itself.
        #expect(
            audit.map { $0["details"] } == [
                ["key": "count", "op": "set", "bytes": 2, "hash": .string(SHA256.hex(Array("41".utf8)))],
                ["key": "note", "op": "set", "bytes": 14, "hash": .string(SHA256.hex(Array(#"{"a":[1,true]}"#.utf8)))],
                ["key": "note", "op": "delete"],
            ])
    }

    @Test func badEditsAreRefusedByNameAndWriteNothing() async throws {
        let directory = try Self.directory(["counter.js": Self.counter])
        let service = try InProcessService(config: try Self.config(directory, limit: 1024))
        let client = try await service.connect()
        _ = try await client.call(.storeSet, ["name": "counter", "key": "count", "value": 1])
        let over = try await client.call(.storeSet, ["name": "counter", "key": "big", "value": .string(String(repeating: "x", count: 2000))])
        #expect(over["error"]["code"] == .number(Double(RPCError.invalidParams)))
        #expect(
            over["error"]["message"]
                == "Invalid params: value refused: store.set: 'big' would make the store of macro 'counter' 2011 bytes, over its limit of 1024 (store_limit_bytes); nothing was written"
        )
        let missing = try await client.call(.storeSet, ["name": "nosuch", "key": "k", "value": 1])
        #expect(missing["error"]["code"] == .number(Double(RPCError.noSuchMacro)))
        #expect(
            try await client.call(.storeSet, ["name": "counter", "key": "k"])["error"]["message"]
                == "Invalid params: value is required (any JSON value; store.delete removes a key)")
        #expect(try await client.call(.storeSet, ["name": "counter", "key": "", "value": 1])["error"]["message"] == "Invalid params: key refused: store: a key must not be empty")
        #expect(try await client.call(.storeGet, ["name": "counter"])["result"]["entries"] == ["count": 1])
    }
}
