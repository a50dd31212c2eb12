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
        do { stats = try client.call("macro.stats", .object(params)) } catch let error as RPCError { throw DaemonLink.report(error) }
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

    /// The table: one row per macro, then each macro's last error.
    static func table(_ rows: [MacroValue]) -> [String] {
        let header = ["NAME", "CALLS", "OK", "THREW", "TIMEOUT", "CANCELLED", "MEMORY", "OTHER", "P50 MS", "P95 MS", "P99 MS", "MAX MS", "JS MS", "RELOADS", "FAILED"]
        var cells = [header]
        for row in rows {
            let errors = row["errors"]
            cells.append([row["name"].stringValue ?? ""] + [row["calls"], row["ok"], errors["threw"], errors["timeout"], errors["cancelled"], errors["memory"], errors["other"]].map(count)
                + [row["p50Ms"], row["p95Ms"], row["p99Ms"], row["maxMs"], row["jsMs"]].map(milliseconds)
                + [count(row["reloads"]), count(row["failedReloads"])])
        }
        let widths = header.indices.map { column in cells.map { $0[column].count }.max() ?? 0 }
        var lines = cells.map { row in
            row.enumerated().map { column, cell in
                // The name left-aligned, the numbers right-aligned.
                column == 0 ? cell.padding(toLength: widths[0], withPad: " ", startingAt: 0)
                    : String(repeating: " ", count: widths[column] - cell.count) + cell
            }.joined(separator: "  ").trimmingCharacters(in: .whitespaces)
        }
        for row in rows where row["lastError"] != .null {
            let last = row["lastError"]
            lines.append("last error of \(row["name"].stringValue ?? ""): \(last["kind"].stringValue ?? "") at \(last["time"].stringValue ?? ""): \(last["message"].stringValue ?? "")")
        }
        return lines
    }

    private static func count(_ value: MacroValue) -> String { value.intValue.map(String.init) ?? "-" }

    private static func milliseconds(_ value: MacroValue) -> String {
        guard case .number(let number) = value else { return "-" }
        return String(format: "%.3f", number)
    }
}
