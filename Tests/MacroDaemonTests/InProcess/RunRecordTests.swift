import Foundation
import Logging
import MacroBase
import MacroDaemonTesting
import MacroEngineCore
import MacroRPC
import MacroTestSupport
import Testing

@testable import MacroDaemon

/// Every run on the record, read back, rolled off failures last, and replayed in the
/// debugger from the values it found.
@Suite("Run records")
struct RunRecordTests {
    static let boom = """
        function boom(limit) {
            const start = progress.inner;
            progress.inner = start + 3;
            store.set("tries", (store.get("tries") ?? 0) + 1);
            console.log("about to check", limit);
            if (progress.inner > limit) {
                throw new RangeError("inner " + progress.inner + " passed " + limit);
            }
            return progress.inner;
        }
        """

    private static func service(_ files: [String: String], configure: (inout MacroConfig) -> Void = { _ in }) throws -> (InProcessService, TemporaryDirectory) {
        let directory = TemporaryDirectory(prefix: "runs")
        try FileManager.default.createDirectory(atPath: directory.url("macros"), withIntermediateDirectories: true)
        for (name, text) in files { _ = try directory.write("macros/\(name)", text) }
        var config = MacroConfig(macrosDirectory: directory.url("macros"), stateFile: directory.url("state.json"))
        configure(&config)
        return (try InProcessService(config: config), directory)
    }

    @Test func aFailingRunsRecordShowsItsArgumentsErrorConsoleAndRolledBackChanges() async throws {
        let (service, directory) = try Self.service(["boom.js": Self.boom])
        let client = try await service.connect()
        #expect(try await client.call(.call, ["name": "boom", "args": [5]])["result"] == 3)
        #expect(try await client.call(.call, ["name": "boom", "args": [5]])["error"]["code"] == .number(Double(RPCError.macroThrew)))
        let list = try #require(try await client.call(.runList)["result"].arrayValue)
        #expect(list.map { $0["ok"] } == [true, false])
        #expect(list[1]["error"] == "RangeError: inner 6 passed 5")
        #expect(list.map { $0["origin"] } == ["socket", "socket"])
        let id = try #require(list[1]["id"].intValue)
        let run = try await client.call(.runGet, ["id": .number(Double(id))])["result"]
        #expect(run["macro"] == "boom")
        #expect(run["arguments"] == [5])
        #expect(run["error"]["location"] == .string(directory.url("macros/boom.js") + ":7:29"))
        #expect(run["error"]["name"] == "RangeError")
        #expect(run["console"] == [["level": "log", "message": "about to check 5"]])
        #expect(run["changes"] == [["channel": "inner", "from": 3, "to": 6, "kept": false]])
        #expect(run["storeChanges"] == [["key": "tries", "from": 1, "to": 2, "kept": false]])
        #expect(run["valuesBefore"] == ["inner": 3, "middle": 0, "outer": 0])
        #expect(run["storeBefore"] == ["tries": 1])
        #expect(run["timings"]["turns"].arrayValue?.count == 1)
        // The success before it kept its changes.
        let first = try await client.call(.runGet, ["id": list[0]["id"]])["result"]
        #expect(first["result"] == 3)
        #expect(first["changes"] == [["channel": "inner", "from": 0, "to": 3, "kept": true]])
    }

    @Test func successesRollOffBeforeFailures() async throws {
        let (service, _) = try Self.service(["boom.js": Self.boom, "reset.js": "function reset() { progress.inner = 0 }"]) {
            $0.runsKept = 2
            $0.failedRunsKept = 3
        }
        let client = try await service.connect()
        for _ in 0..<4 {
            _ = try await client.call(.call, ["name": "reset"])
            _ = try await client.call(.call, ["name": "boom", "args": [5]])  // ok: 3
            _ = try await client.call(.call, ["name": "boom", "args": [5]])  // fails: 6 > 5
        }
        let boom = try #require(try await client.call(.runList, ["name": "boom"])["result"].arrayValue)
        // 4 successes and 4 failures ran; the last 2 successes and the last 3 failures are kept.
        #expect(boom.map { $0["ok"] } == [false, true, false, true, false])
        #expect(try await client.call(.runList, ["name": "boom", "failed": true])["result"].arrayValue?.count == 3)
        #expect(try await client.call(.runGet, ["id": boom[0]["id"]])["result"]["error"]["name"] == "RangeError")
        #expect(try await client.call(.runGet, ["id": 2])["error"]["code"] == .number(Double(RPCError.invalidParams)))
    }

    @Test func replayingAFailedRunStopsAtTheThrowWithTheValuesItHad() async throws {
        let (service, directory) = try Self.service(["boom.js": Self.boom])
        defer { withExtendedLifetime(directory) {} }
        let client = try await service.connect()
        _ = try await client.call(.call, ["name": "boom", "args": [5]])
        _ = try await client.call(.call, ["name": "boom", "args": [5]])
        // The live values moved on since: the replay starts from what the run found.
        _ = try await client.call(.progressSet, ["inner": 9])
        let failed = try #require(try await client.call(.runList, ["failed": true])["result"].arrayValue?.last?["id"])
        let started = try await client.call(.debugStart, ["run": failed], id: 1)
        #expect(started["result"]["macro"] == "boom", "\(started)")
        let session = try #require(started["result"]["session"].intValue)
        try await client.request(.debugRun, ["session": .number(Double(session))], id: 2)
        var stopped: MacroValue?
        while stopped == nil {
            let message = try await client.next()
            if message["method"] == "debug.stopped" { stopped = message["params"] }
            #expect(message["method"] != "debug.terminated", "\(message)")
            if message["method"] == "debug.terminated" { return }
        }
        #expect(stopped?["reason"] == "exception")
        #expect(stopped?["line"] == 7)
        func request(_ op: String, _ args: MacroValue, id: Int) async throws -> MacroValue {
            try await client.call(.debugRequest, ["session": .number(Double(session)), "op": .string(op), "args": args], id: id)["result"]
        }
        let frames = try await request("stackTrace", [:], id: 3)["frames"]
        let scopes = try await request("scopes", ["frameId": frames[0]["id"]], id: 4)
        let variables = try await request("variables", ["ref": scopes["scopes"][0]["ref"]], id: 5)
        var locals: [String: String] = [:]
        for variable in variables["variables"].arrayValue ?? [] { locals[variable["name"].stringValue ?? ""] = variable["value"].stringValue }
        #expect(locals["limit"] == "5")
        #expect(locals["start"] == "3")
        #expect(try await request("evaluate", ["expression": "progress.inner + ':' + store.get('tries')", "frameId": frames[0]["id"]], id: 6)["value"] == "\"6:2\"")
        try await client.request(.debugTerminate, ["session": .number(Double(session))], id: 7)
        // Nothing of the replay reached the live values.
        var live: MacroValue?
        while live == nil {
            let message = try await client.next()
            if message["id"] == 7 { live = try await client.call(.progressGet, id: 8)["result"] }
        }
        #expect(live?["inner"] == 9)
        #expect(try await client.call(.storeGet, ["name": "boom", "key": "tries"], id: 9)["result"]["value"] == 1)
    }

    @Test func aReplayOfAnotherVersionOrAnUnknownRunIsRefusedByName() async throws {
        let (service, directory) = try Self.service(["boom.js": Self.boom])
        let client = try await service.connect()
        _ = try await client.call(.call, ["name": "boom", "args": [50]])
        _ = try await client.call(.save, ["name": "boom", "source": "function boom() { return 1 }"])
        let changed = try await client.call(.debugStart, ["run": 1])
        #expect(changed["error"]["code"] == .number(Double(RPCError.debugFailed)))
        #expect(changed["error"]["message"].stringValue?.contains("a replay runs the code that ran") == true, "\(changed)")
        #expect(try await client.call(.debugStart, ["run": 99])["error"]["message"].stringValue?.contains("no run 99 is kept") == true)
        withExtendedLifetime(directory) {}
    }

    @Test func aReloadTurnsRecordingOffAndOnAndAppliesTheLimitsKeepingTheRecordsSoFar() async throws {
        let (service, directory) = try Self.service(["boom.js": Self.boom])
        let logger = Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }
        let watch = MacrosWatchService(library: service.environment.library, loop: service.environment.engine.eventLoop, logger: logger)
        let file = try directory.write("macroengine.yaml", "record_runs: false\n")
        let reload = ConfigReloadService(configFile: file, config: service.environment.config, host: service.host, watch: watch, logger: logger)
        let client = try await service.connect()
        func ids() async throws -> [MacroValue] { try await client.call(.runList)["result"].arrayValue?.map { $0["id"] } ?? [] }
        #expect(try await client.call(.call, ["name": "boom", "args": [100]])["result"] == 3)
        await reload.reload()
        #expect(try await client.call(.call, ["name": "boom", "args": [100]])["result"] == 6)
        #expect(try await ids() == [1])
        _ = try directory.write("macroengine.yaml", "record_runs: true\nruns_kept: 1\n")
        await reload.reload()
        for expected in [9.0, 10.0] { #expect(try await client.call(.call, ["name": "boom", "args": [100]])["result"] == .number(expected)) }
        // Recorded again from the reload on, and only the last success kept (runs_kept: 1).
        #expect(try await ids() == [3])
        #expect(try await client.call(.runGet, ["id": 3])["result"]["changes"] == [["channel": "inner", "from": 9, "to": 10, "kept": true]])
    }
}
