import ArgumentParser
import Foundation
import MacroBase
import MacroRPC

/// `macro stats [NAME] [--reset] [--json]`: the daemon's per-macro statistics (`macro.stats`).
struct Stats: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stats",
        abstract: "Per-macro statistics from the daemon: calls, errors by kind, latency p50/p95/p99/max, time in JavaScript, reloads.",
        discussion: "Latencies are in milliseconds, from a call's start on the engine to its settling. --reset clears the statistics (of NAME, or all) after printing them.")
    @Argument(help: "Only this macro.") var name: String?
    @Flag(name: .long, help: "Clear the statistics after printing them.") var reset = false
    @OptionGroup var daemon: DaemonOptions
    var options: EngineOptions { EngineOptions(daemon) }

    func run() throws {
        let client = try DaemonLink.require(options, for: "stats")
        var params = OrderedFields()
        if let name { params["name"] = .string(name) }
        if reset { params["reset"] = true }
        let stats: MacroValue
        do { stats = try client.call(.stats, .object(params)) } catch let error as RPCError { throw DaemonLink.report(error) }
        if options.json {
            print(stats.jsonText())
            return
        }
        let rows = stats.arrayValue ?? []
        if rows.isEmpty {
            Console.error("no macros")
            return
        }
        for line in Self.table(rows) { print(line) }
    }

    /// The table, within 80 columns for names up to 16 characters: one row per macro (calls, ok,
    /// errors in all, latency in milliseconds, reloads), then each macro's errors by kind and its
    /// last error.
    static func table(_ rows: [MacroValue]) -> [String] {
        let header = ["NAME", "CALLS", "OK", "ERRORS", "P50MS", "P95MS", "P99MS", "MAXMS", "JSMS", "RELOADS"]
        var cells = [header]
        for row in rows {
            let errors = row["errors"]
            let total = CallKinds.errors.reduce(0) { $0 + (errors[$1].intValue ?? 0) }
            cells.append(
                [row["name"].stringValue ?? "", count(row["calls"]), count(row["ok"]), String(total)]
                    + [row["p50Ms"], row["p95Ms"], row["p99Ms"], row["maxMs"], row["jsMs"]].map(milliseconds)
                    + [count(row["reloads"])])
        }
        let widths = header.indices.map { column in cells.map { $0[column].count }.max() ?? 0 }
        var lines = cells.map { row in
            row.enumerated().map { column, cell in
                // The name left-aligned, the numbers right-aligned.
                column == 0
                    ? cell.padding(toLength: widths[0], withPad: " ", startingAt: 0)
                    : String(repeating: " ", count: widths[column] - cell.count) + cell
            }.joined(separator: " ").trimmingCharacters(in: .whitespaces)
        }
        for row in rows {
            let name = row["name"].stringValue ?? ""
            let kinds = CallKinds.errors.compactMap { kind -> String? in
                guard let n = row["errors"][kind].intValue, n > 0 else { return nil }
                return "\(kind) \(n)"
            }
            let failed = row["failedReloads"].intValue ?? 0
            if !kinds.isEmpty || failed > 0 {
                lines.append("errors of \(name): " + (kinds + (failed > 0 ? ["failed reloads \(failed)"] : [])).joined(separator: ", "))
            }
            if row["lastError"] != .null {
                let last = row["lastError"]
                lines.append("last error of \(name): \(last["kind"].stringValue ?? "") at \(last["time"].stringValue ?? ""): \(last["message"].stringValue ?? "")")
            }
        }
        return lines
    }

    /// The error kinds of `macro.stats`, in its order.
    enum CallKinds {
        static let errors = ["threw", "timeout", "cancelled", "memory", "quarantined", "other"]
    }

    private static func count(_ value: MacroValue) -> String { value.intValue.map(String.init) ?? "-" }

    private static func milliseconds(_ value: MacroValue) -> String {
        guard case .number(let number) = value else { return "-" }
        return String(format: number < 100 ? "%.2f" : "%.0f", number)
    }
}
