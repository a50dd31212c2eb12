import MacroDaemon
import MacroEngineCore

/// The statistics' budget: what the always-on statistics add to each call. The table macrod records
/// into (``StatisticsTable`` with its Prometheus metrics) takes exactly what a call gives it on
/// the engine's loop: its start, the end of its turn (time in JavaScript), its settling with two
/// clock reads for the latency. The report divides this by a call's time at the measured rate.
enum StatisticsCost {
    /// Nanoseconds of recording per call (best of `rounds` of `calls`).
    static func nanosecondsPerCall(calls: Int = 1_000_000, rounds: Int = 3) throws -> Double {
        let table = StatisticsTable(metrics: EngineMetrics())
        var best = Double.infinity
        var id = 0
        for _ in 0..<rounds {
            let start = monotonicNanoseconds()
            for _ in 0..<calls {
                id += 1
                let began = ContinuousClock.now
                table.started(id, macro: "add")
                table.turnEnded(call: id, nanoseconds: 900)
                let elapsed = ContinuousClock.now - began
                table.finished(id, macro: "add", nanoseconds: UInt64(elapsed.components.attoseconds / 1_000_000_000), failure: nil)
                table.turnEnded(call: 0, nanoseconds: 0)
            }
            best = min(best, Double(monotonicNanoseconds() - start) / Double(calls))
        }
        let calls = table.json("add")["calls"].intValue ?? 0
        guard calls == id else { throw BenchError("statistics: recorded \(calls) calls of \(id)") }
        return best
    }
}
