/// Section 11, the run records' budget: two fresh macrods that differ only in `record_runs`,
/// measured in alternating rounds (ABBA, so a drift of the machine falls on both alike). Each
/// round gives one ratio, recorded over not; the row shows the median ratio, so one noisy
/// round on a shared machine moves nothing.
enum RunRecordCost {
    /// Rounds per client count (each one run of both daemons).
    static let rounds = 8

    /// Adds section 11's rows to `report`: at 1 client (`calls` sequential calls) and at
    /// `clients` (`callsPerClient` each), calls/s and server CPU per call.
    static func measure(
        into report: inout Report, binaries: String, directory: String, wire: Wire, calls: Int, callsPerClient: Int,
        clients: Int, macrodConfig: String
    ) throws {
        let recorded = try Macrod(binaries: binaries, directory: "\(directory)/macrod-recorded", extraConfig: "record_runs: true\n" + macrodConfig)
        defer { recorded.stop() }
        let plain = try Macrod(binaries: binaries, directory: "\(directory)/macrod-unrecorded", extraConfig: "record_runs: false\n" + macrodConfig)
        defer { plain.stop() }
        report.section("11. Run records: add with every run recorded vs record_runs: false (median of \(rounds) alternating rounds)")
        for count in [1, clients] {
            let per = count == 1 ? calls : callsPerClient
            func load(_ daemon: Macrod) throws -> LoadResult {
                try runLoad(path: daemon.socketPath, wire: wire, clients: count, callsPerClient: per, server: daemon.child)
            }
            // A warm-up of each before the rounds count.
            _ = try load(recorded)
            _ = try load(plain)
            var pairs: [(recorded: LoadResult, plain: LoadResult)] = []
            for round in 0..<rounds {
                if round % 2 == 0 {
                    let first = try load(recorded)
                    pairs.append((first, try load(plain)))
                } else {
                    let first = try load(plain)
                    pairs.append((try load(recorded), first))
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

    private static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return .nan }
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }
}
