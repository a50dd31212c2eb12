import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The printed table: one row per measured pair, grouped by scenario, with notes.
struct Report {
    private var lines: [String] = []
    private var met = 0
    private var missed = 0

    mutating func header(binaries: String) {
        let cpu =
            (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8))?
            .split(separator: "\n").first(where: { $0.hasPrefix("model name") })?
            .split(separator: ":").last.map { $0.trimmingCharacters(in: .whitespaces) } ?? "unknown CPU"
        var name = utsname()
        uname(&name)
        let kernel = withUnsafeBytes(of: name.release) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
        let date = ISO8601DateFormatter().string(from: Date())
        lines.append("MacroEngine benchmark, \(date)")
        lines.append("Machine: \(cpu), \(sysconf(Int32(_SC_NPROCESSORS_ONLN))) cores, Linux \(kernel); binaries: \(binaries)")
    }

    mutating func section(_ title: String) {
        lines.append("")
        lines.append(title)
        lines.append(pad("", 44) + pad("macrod", 14) + pad("anchor", 14) + pad("ratio", 9) + "target")
    }

    mutating func note(_ text: String) { lines.append("  note: " + text) }

    /// A row. `target` is a bound on ours/anchor (upper when lower is better, lower otherwise);
    /// `absoluteTarget` an upper bound on our figure alone.
    mutating func row(
        _ label: String, ours: Double, anchor: Double?, unit: String, lowerIsBetter: Bool,
        target: Double?, absoluteTarget: Double? = nil
    ) {
        let ratio = anchor.map { ours / $0 }
        var goal = ""
        if let target, let ratio {
            let ok = lowerIsBetter ? ratio <= target : ratio >= target
            goal = (lowerIsBetter ? "<= " : ">= ") + format(target) + "x  " + (ok ? "met" : "MISSED")
            if ok { met += 1 } else { missed += 1 }
        } else if let target {
            goal = (lowerIsBetter ? "<= " : ">= ") + format(target) + "x  (no anchor)"
        } else if let absoluteTarget {
            let ok = ours <= absoluteTarget
            goal = "<= " + format(absoluteTarget) + " " + unit + "  " + (ok ? "met" : "MISSED")
            if ok { met += 1 } else { missed += 1 }
        }
        lines.append(
            pad("  " + label, 44) + pad(format(ours) + " " + unit, 14)
                + pad(anchor.map { format($0) + " " + unit } ?? "-", 14)
                + pad(ratio.map { format($0) + "x" } ?? "-", 9) + goal)
    }

    /// Our load against each anchor's: a calls/s row per `calls` anchor (higher is better),
    /// then a server-CPU-per-call row per `cpu` anchor (lower is better). `prefix` starts each
    /// label; each anchor is a name, its load (nil: not measured) and its target ratio.
    mutating func versus(
        _ prefix: String, ours: LoadResult, calls: [(name: String, load: LoadResult?, target: Double?)],
        cpu: [(name: String, load: LoadResult?, target: Double?)]
    ) {
        for anchor in calls {
            row(
                "\(prefix)calls/s vs \(anchor.name)", ours: ours.callsPerSecond, anchor: anchor.load?.callsPerSecond, unit: "/s",
                lowerIsBetter: false, target: anchor.target)
        }
        for anchor in cpu {
            row(
                "\(prefix)server CPU per call vs \(anchor.name)", ours: ours.serverCPUMicros, anchor: anchor.load?.serverCPUMicros,
                unit: "us", lowerIsBetter: true, target: anchor.target)
        }
    }

    func print() {
        for line in lines { Swift.print(line) }
        Swift.print("")
        Swift.print("targets: \(met) met, \(missed) missed")
    }

    private func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text + " " : text + String(repeating: " ", count: width - text.count)
    }
}

/// Three significant figures, no exponent.
func format(_ value: Double) -> String {
    guard value.isFinite else { return "n/a" }
    if value >= 100 { return String(format: "%.0f", value) }
    if value >= 10 { return String(format: "%.1f", value) }
    return String(format: "%.2f", value)
}
