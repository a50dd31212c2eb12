import CoreMetrics
import MacroEngineCore
import NIOCore

/// The per-macro statistics, confined to the engine's loop: every call is recorded there, where
/// it settles, so recording takes no lock (the Prometheus counter is an atomic add, its latency
/// histogram one uncontended lock). Read by `macro.stats`, which also runs on the loop.
package final class StatisticsTable {
    private struct Entry {
        var stats = MacroStatistics()
        var counters: [CallOutcome: CoreMetrics.Counter] = [:]
        var duration: CoreMetrics.Timer?

        /// Counts one call, in the statistics and in the Prometheus metrics (made on first use).
        mutating func record(_ outcome: CallOutcome, nanoseconds: UInt64, failure: (any Error)?, macro: String, metrics: EngineMetrics) {
            stats.record(outcome, nanoseconds: nanoseconds, error: failure)
            if duration == nil { duration = metrics.callDuration(macro: macro) }
            duration?.recordNanoseconds(Int64(clamping: nanoseconds))
            if counters[outcome] == nil { counters[outcome] = metrics.callCounter(macro: macro, outcome: outcome) }
            counters[outcome]?.increment()
        }
    }

    private var entries: [String: Entry] = [:]
    /// Calls in flight on the engine, by call id: their macro, for the time their turns spend in JavaScript.
    private var running: [Int: String] = [:]
    /// Calls that settled during the current turn: forgotten after that turn's time is counted.
    private var settled: [Int] = []
    /// The Prometheus metrics the calls also count in.
    package let metrics: EngineMetrics

    /// A table whose calls also count in `metrics`.
    package init(metrics: EngineMetrics) { self.metrics = metrics }

    /// A call of `macro` starts as call `id`.
    package func started(_ id: Int, macro: String) { running[id] = macro }

    /// Call `id` of `macro` settled after `nanoseconds` with `result`.
    package func finished(_ id: Int, macro: String, nanoseconds: UInt64, failure: (any Error)?) {
        settled.append(id)
        let outcome: CallOutcome
        if let failure {
            guard let kind = CallOutcome(failure: failure) else { return }
            outcome = kind
        } else {
            outcome = .ok
        }
        entries[macro, default: Entry()].record(outcome, nanoseconds: nanoseconds, failure: failure, macro: macro, metrics: metrics)
    }

    /// A turn ended: its time in JavaScript goes to the macro of the call it served.
    package func turnEnded(call: Int, nanoseconds: UInt64) {
        if nanoseconds > 0, call != 0, let macro = running[call] {
            entries[macro, default: Entry()].stats.javaScriptNanoseconds &+= nanoseconds
        }
        guard !settled.isEmpty else { return }
        for id in settled { running.removeValue(forKey: id) }
        settled.removeAll(keepingCapacity: true)
    }

    /// A file loaded (`ok`) or failed to load. Versions after the first are reloads.
    func loaded(_ name: String, version: Int) {
        guard version > 1 else { return }
        metrics.reloaded(ok: true)
        guard !name.hasPrefix("lib/") else { return }
        entries[name, default: Entry()].stats.reloads += 1
    }

    /// A file did not load (at start or on a save): a failed reload.
    func failed(_ name: String) {
        metrics.reloaded(ok: false)
        guard !name.hasPrefix("lib/") else { return }
        entries[name, default: Entry()].stats.failedReloads += 1
    }

    /// The names with statistics.
    var names: [String] { Array(entries.keys) }

    /// The `macro.stats` object of `name` (zeros when nothing was recorded).
    package func json(_ name: String) -> MacroValue { (entries[name]?.stats ?? MacroStatistics()).json(name: name) }

    /// Forgets the statistics of `name`, or of every macro (the Prometheus counters go on).
    func reset(_ name: String?) {
        if let name {
            entries[name]?.stats = MacroStatistics()
        } else {
            for key in entries.keys { entries[key]?.stats = MacroStatistics() }
        }
    }
}
