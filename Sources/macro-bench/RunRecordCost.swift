import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Section 11, the run records' budget: one macrod, measured in alternating rounds with
/// `record_runs: true` and `false` (switched by SIGHUP, ABBA, so a drift of the machine falls on
/// both alike). One process for both sides: two processes, identical but for the setting,
/// differed by up to 6% whichever recorded (an A/A pair under a build's load), which is more
/// than the budget. Each round gives one ratio, recorded over not; the row shows the median
/// ratio, so one noisy round on a shared machine moves nothing.
enum RunRecordCost {
    /// Rounds per client count (each one load with records and one without).
    static let rounds = 8

    /// Adds section 11's rows to `report`: at 1 client (`calls` sequential calls) and at
    /// `clients` (`callsPerClient` each), calls/s and server CPU per call.
    static func measure(
        into report: inout Report, binaries: String, directory: String, wire: Wire, calls: Int, callsPerClient: Int,
        clients: Int, macrodConfig: String
    ) throws {
        let daemon = try Macrod(binaries: binaries, directory: "\(directory)/macrod-records", extraConfig: "record_runs: true\n" + macrodConfig)
        defer { daemon.stop() }
        var recording = true
        func record(_ on: Bool) throws {
            guard on != recording else { return }
            try daemon.reload(extraConfig: "record_runs: \(on)\n" + macrodConfig) {
                // Applied when a call adds a record exactly when recording is on.
                let before = try lastRunID(daemon)
                _ = try daemon.request(String(decoding: Macrod.call("add", "1").dropLast(), as: UTF8.self))
                return (try lastRunID(daemon) != before) == on
            }
            recording = on
        }
        report.section("11. Run records: add with every run recorded vs record_runs: false (one macrod switched by SIGHUP; median of \(rounds) alternating rounds)")
        for count in [1, clients] {
            let per = count == 1 ? calls : callsPerClient
            func load(recorded: Bool) throws -> LoadResult {
                try record(recorded)
                return try runLoad(path: daemon.socketPath, wire: wire, clients: count, callsPerClient: per, server: daemon.child)
            }
            // A warm-up of each before the rounds count.
            _ = try load(recorded: true)
            _ = try load(recorded: false)
            var pairs: [(recorded: LoadResult, plain: LoadResult)] = []
            for round in 0..<rounds {
                if round % 2 == 0 {
                    let first = try load(recorded: true)
                    pairs.append((first, try load(recorded: false)))
                } else {
                    let first = try load(recorded: false)
                    pairs.append((try load(recorded: true), first))
                }
            }
            let rate = median(pairs.map { $0.recorded.callsPerSecond / $0.plain.callsPerSecond })
            let cpu = median(pairs.map { $0.recorded.serverCPUMicros / $0.plain.serverCPUMicros })
            let plainRate = median(pairs.map(\.plain.callsPerSecond))
            let plainCPU = median(pairs.map(\.plain.serverCPUMicros))
            let clientsLabel = "\(count) client\(count == 1 ? "" : "s")"
            report.row(
                "\(clientsLabel): calls/s recorded vs not", ours: plainRate * rate, anchor: plainRate, unit: "/s", lowerIsBetter: false,
                target: 0.97)
            report.row(
                "\(clientsLabel): server CPU per call recorded vs not", ours: plainCPU * cpu, anchor: plainCPU, unit: "us",
                lowerIsBetter: true, target: 1.03)
            let spread = pairs.map { format($0.recorded.serverCPUMicros / $0.plain.serverCPUMicros) }.joined(separator: " ")
            report.note("\(clientsLabel): server CPU ratio of each round, recorded over not: \(spread)")
        }
        report.note(
            "The run records' budget: recording may cost at most 3% of a call (targets 0.97x and 1.03x). The figures are the unrecorded medians and those times the median ratio."
        )
    }

    /// The id of the last run macrod keeps (0: none).
    private static func lastRunID(_ daemon: Macrod) throws -> Int {
        let reply = try daemon.request(#"{"jsonrpc":"2.0","id":1,"method":"run.list","params":{"limit":1}}"#)
        guard let object = try JSONSerialization.jsonObject(with: Data(reply.utf8)) as? [String: Any], let runs = object["result"] as? [[String: Any]]
        else { throw BenchError("run.list answered \(reply)") }
        return (runs.last?["id"] as? Int) ?? 0
    }

    private static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return .nan }
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }
}
