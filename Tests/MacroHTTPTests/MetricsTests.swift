import Foundation
import MacroEngineCore
import MacroRPC
import MacroTestSupport
import Testing

/// `GET /metrics`: the token, Prometheus' text format as prometheus_client (PyPI) parses it, and
/// counters that match `macro.stats`.
@Suite("Prometheus metrics", .serialized)
struct MetricsTests {
    static let pythonPath = repositoryRoot + "/.build/python"
    static let files = [
        "echo.js": "function(x) { return x }",
        "boom.js": "function() { throw new Error('no') }",
        "spin.js": "function() { while (true) {} }",
    ]

    /// One parsed sample.
    struct Sample {
        var family: String
        var type: String
        var name: String
        var labels: [String: String]
        var value: Double
    }

    /// `text` through prometheus_client's parser.
    static func parse(_ text: String) throws -> [Sample] {
        let check = try BinaryRunner.run("/usr/bin/env", ["python3", "-c", "import prometheus_client"], environment: ["PYTHONPATH": pythonPath])
        try #require(check.status == 0, "prometheus_client is missing: run `make test-deps`\n\(check)")
        let parsed = try BinaryRunner.run(
            "/usr/bin/env", ["python3", repositoryRoot + "/Tests/clients/prometheus_parse.py"],
            environment: ["PYTHONPATH": pythonPath], input: text)
        try #require(parsed.status == 0, "prometheus_client refused the text:\n\(parsed)\n\(text)")
        return try #require(try MacroValue(jsonText: parsed.stdout).arrayValue).map { sample in
            var labels: [String: String] = [:]
            for (key, value) in sample["labels"].objectValue ?? [:] { labels[key] = value.stringValue }
            return Sample(
                family: sample["family"].stringValue ?? "", type: sample["type"].stringValue ?? "",
                name: sample["name"].stringValue ?? "", labels: labels, value: sample["value"].doubleValue ?? .nan)
        }
    }

    @Test func metricsNeedTheToken() throws {
        let dashboard = try DashboardDaemon(files: Self.files)
        #expect(try HTTPProbe.request(port: dashboard.port, "GET", "/metrics").status == 401)
        #expect(try HTTPProbe.request(port: dashboard.port, "GET", "/metrics", headers: [("Authorization", "Bearer nope")]).status == 401)
        let reply = try HTTPProbe.request(port: dashboard.port, "GET", "/metrics", headers: [dashboard.bearer])
        #expect(reply.status == 200, "\(reply)")
        #expect(reply.header("Content-Type") == "text/plain; version=0.0.4; charset=utf-8")
    }

    @Test func prometheusClientParsesTheMetricsAndTheyMatchMacroStats() throws {
        let dashboard = try DashboardDaemon(files: Self.files)
        let client = try dashboard.daemon.client()
        for value in 1...3 { _ = try client.call("macro.call", ["name": "echo", "args": [.number(Double(value))]]) }
        for _ in 0..<2 { _ = try #require(throws: RPCError.self) { try client.call("macro.call", ["name": "boom"]) } }
        _ = try #require(throws: RPCError.self) { try client.call("macro.call", ["name": "spin", "timeoutMs": 50]) }
        _ = try client.call("subscribe", ["events": ["macros"]])
        _ = try client.call("macro.save", ["name": "echo", "source": "function(x) { return [x] }"])
        _ = try client.waitFor("macro.loaded")
        let stats = try #require(try client.call("macro.stats").arrayValue)

        let reply = try HTTPProbe.request(port: dashboard.port, "GET", "/metrics", headers: [dashboard.bearer])
        #expect(reply.status == 200, "\(reply)")
        let samples = try Self.parse(reply.body)
        func value(_ name: String, _ labels: [String: String] = [:]) -> Double? {
            samples.first { $0.name == name && $0.labels == labels }?.value
        }

        // Every outcome macro.stats counts is a calls_total sample with the same value, and no other.
        var expected: [[String: String]: Double] = [:]
        for row in stats {
            let name = row["name"].stringValue ?? ""
            if let ok = row["ok"].doubleValue, ok > 0 { expected[["macro": name, "outcome": "ok"]] = ok }
            for (kind, count) in row["errors"].objectValue ?? [:] where (count.doubleValue ?? 0) > 0 {
                expected[["macro": name, "outcome": kind]] = count.doubleValue
            }
        }
        #expect(expected == [["macro": "echo", "outcome": "ok"]: 3, ["macro": "boom", "outcome": "threw"]: 2, ["macro": "spin", "outcome": "timeout"]: 1])
        var calls: [[String: String]: Double] = [:]
        for sample in samples where sample.name == "macroengine_calls_total" { calls[sample.labels] = sample.value }
        #expect(calls == expected)
        #expect(samples.first { $0.name == "macroengine_calls_total" }?.type == "counter")

        // The latency histogram: one observation per call, per macro.
        #expect(samples.first { $0.name == "macroengine_call_duration_seconds_count" }?.type == "histogram")
        #expect(value("macroengine_call_duration_seconds_count", ["macro": "echo"]) == 3)
        #expect(value("macroengine_call_duration_seconds_count", ["macro": "boom"]) == 2)
        #expect(value("macroengine_call_duration_seconds_count", ["macro": "spin"]) == 1)
        #expect(value("macroengine_call_duration_seconds_bucket", ["macro": "spin", "le": "+Inf"]) == 1)
        #expect((value("macroengine_call_duration_seconds_sum", ["macro": "spin"]) ?? 0) >= 0.05)

        #expect(value("macroengine_reloads_total", ["result": "ok"]) == 1)
        #expect(value("macroengine_reloads_total", ["result": "failed"]) == 0)
        #expect((value("macroengine_js_heap_bytes") ?? 0) > 0)
        #expect((value("macroengine_connections") ?? 0) >= 1)
        #expect(value("macroengine_queue_depth") == 0)
        #expect(value("macroengine_engine_restarts_total") == 0)
        // A reset of macro.stats leaves the counters alone (they only go up).
        _ = try client.call("macro.stats", ["reset": true])
        let after = try Self.parse(try HTTPProbe.request(port: dashboard.port, "GET", "/metrics", headers: [dashboard.bearer]).body)
        #expect(after.first { $0.name == "macroengine_calls_total" && $0.labels == ["macro": "echo", "outcome": "ok"] }?.value == 3)
    }

    @Test func engineRestartsAreCountedAcrossTheRestart() throws {
        var files = Self.files
        files["loop.js"] = "async function() { for (;;) await null; }"
        let dashboard = try DashboardDaemon(files: files, config: "time_limit_ms: 300\nstall_grace_ms: 300\n")
        let client = try dashboard.daemon.client()
        let error = try #require(throws: RPCError.self) { try client.call("macro.call", ["name": "loop"]) }
        #expect(error.code == RPCError.timeout)
        // The re-executed macrod keeps the connection, the port and the token; it learnt the count
        // from the hand-over.
        #expect(try client.call("macro.call", ["name": "echo", "args": [1]]) == 1)
        let reply = try HTTPProbe.request(port: dashboard.port, "GET", "/metrics", headers: [dashboard.bearer])
        // Foundation's Process watches its child through a descriptor the restart closed: until
        // macrod exits, Process cannot run another child (the parser), so stop it first.
        #expect(dashboard.daemon.stop() == 0)
        let samples = try Self.parse(reply.body)
        #expect(samples.first { $0.name == "macroengine_engine_restarts_total" }?.value == 1)
        #expect(samples.first { $0.name == "macroengine_calls_total" && $0.labels == ["macro": "echo", "outcome": "ok"] }?.value == 1)
    }
}
