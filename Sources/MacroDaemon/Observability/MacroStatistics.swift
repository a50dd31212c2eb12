import Foundation
import Histogram
import MacroEngineCore
import MacroRPC

/// What macrod knows about one macro since it started (or since the last `macro.stats` reset):
/// calls, errors by kind, the last error, latency percentiles (HdrHistogram, microseconds, three
/// significant digits), time spent in JavaScript, reloads. Owned by ``StatisticsTable`` on the
/// engine's loop.
struct MacroStatistics {
    /// The last error: its kind, its message and when it happened.
    struct LastError {
        var kind: CallOutcome
        var message: String
        var time: Date
    }

    var calls = 0
    var errors: [CallOutcome: Int] = [:]
    var lastError: LastError?
    /// Call latencies in microseconds, from the call's start on the engine to its settling.
    var latency = Histogram<UInt32>(numberOfSignificantValueDigits: .three)
    /// The exact largest latency, in nanoseconds (the histogram's maximum is rounded to its precision).
    var maxNanoseconds: UInt64 = 0
    /// Time inside JavaScript on behalf of this macro's calls (every turn: the call, its timers,
    /// its continuations after an await), in nanoseconds.
    var javaScriptNanoseconds: UInt64 = 0
    /// New versions that went live after the first one.
    var reloads = 0
    /// Saves (or loads) that did not load.
    var failedReloads = 0

    /// Counts one finished call.
    mutating func record(_ outcome: CallOutcome, nanoseconds: UInt64, error: (any Error)?) {
        calls += 1
        let microseconds = max(1, (nanoseconds + 500) / 1000)
        _ = latency.record(microseconds)
        maxNanoseconds = max(maxNanoseconds, nanoseconds)
        guard outcome != .ok else { return }
        errors[outcome, default: 0] += 1
        let message = (error as? MacroError)?.headline ?? error.map { "\($0)" } ?? outcome.rawValue
        lastError = LastError(kind: outcome, message: message, time: Date())
    }

    /// The `macro.stats` object for `name`. Milliseconds with microsecond precision; the
    /// percentiles are null before the first call.
    func json(name: String) -> MacroValue {
        var fields: OrderedFields = ["name": .string(name), "calls": .number(Double(calls))]
        fields["ok"] = .number(Double(calls - errors.values.reduce(0, +)))
        var kinds = OrderedFields()
        for kind in CallOutcome.errorKinds { kinds[kind.rawValue] = .number(Double(errors[kind] ?? 0)) }
        fields["errors"] = .object(kinds)
        if let lastError {
            fields["lastError"] = [
                "kind": .string(lastError.kind.rawValue), "message": .string(lastError.message),
                "time": .string(LogRecordFormat.timestamp(lastError.time)),
            ]
        } else {
            fields["lastError"] = .null
        }
        for (key, percentile) in [("p50Ms", 50.0), ("p95Ms", 95.0), ("p99Ms", 99.0)] {
            // HdrHistogram answers the highest value equivalent to the bucket; never above the true max.
            let microseconds = min(latency.valueAtPercentile(percentile), (maxNanoseconds + 500) / 1000)
            fields[key] = calls == 0 ? .null : .number(Self.milliseconds(microseconds: microseconds))
        }
        fields["maxMs"] = calls == 0 ? .null : .number(Self.milliseconds(nanoseconds: maxNanoseconds))
        fields["jsMs"] = .number(Self.milliseconds(nanoseconds: javaScriptNanoseconds))
        fields["reloads"] = .number(Double(reloads))
        fields["failedReloads"] = .number(Double(failedReloads))
        return .object(fields)
    }

    static func milliseconds(microseconds: UInt64) -> Double { Double(microseconds) / 1000 }
    static func milliseconds(nanoseconds: UInt64) -> Double { (Double(nanoseconds) / 1000).rounded() / 1000 }
}
