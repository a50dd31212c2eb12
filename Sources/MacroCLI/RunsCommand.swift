import ArgumentParser
import Foundation
import MacroBase
import MacroRPC

/// `macro runs [NAME] [--failed]` and `macro runs show ID`.
struct RunsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "runs",
        abstract: "Show what past runs of the macros did, in the daemon.",
        discussion: """
            macrod records every run, whatever started it (a call, a trigger, the dashboard): \
            its arguments, its result or its error at file:line:column, its console lines, the \
            changes it made to the rings and its store (those a failure rolled back too), and its \
            timings. Failures are kept longer than successes (runs_kept, failed_runs_kept, runs_bytes).

              macro runs                   the last runs of every macro, oldest first
              macro runs tally --failed    only tally's failures
              macro runs show 42           everything run 42 did
              macro runs --json            one JSON object a line (jq, log shippers)

            A run is replayed in the debugger: macro dap, launch {"run": 42}.
            """)
    @Argument(help: "A macro's name, or `show ID`.", completion: .custom(Completions.macroNames)) var words: [String] = []
    @Flag(help: "Only failed runs.") var failed = false
    @Option(help: "At most this many (the newest).") var limit: Int = 100
    @OptionGroup var daemon: DaemonOptions
    var options: EngineOptions { EngineOptions(daemon) }

    func validate() throws {
        if words.first == "show" {
            guard words.count == 2, Int(words[1]) != nil else { throw ValidationError("`macro runs show` takes one run id, such as `macro runs show 42`") }
            if failed { throw ValidationError("--failed lists runs; `show` shows one") }
        } else if words.count > 1 {
            throw ValidationError("`macro runs` takes at most one macro name (or `show ID`)")
        }
        guard limit >= 1 else { throw ValidationError("--limit must be at least 1") }
    }

    func run() throws {
        let client = try DaemonLink.require(options, for: "runs")
        do {
            if words.first == "show", let id = Int(words[1]) { return try show(client, id) }
            var params: OrderedFields = ["limit": .number(Double(limit))]
            if let name = words.first { params["name"] = .string(name) }
            if failed { params["failed"] = true }
            let list = try client.call(.runList, .object(params)).arrayValue ?? []
            if options.json {
                // JSON lines: each record whole.
                for summary in list {
                    guard let id = summary["id"].intValue else { continue }
                    print(try client.call(.runGet, ["id": .number(Double(id))]).jsonText())
                }
                return
            }
            if list.isEmpty { return Console.error(failed ? "no failed run is kept" : "no run is kept") }
            for run in list {
                let outcome = run["ok"] == true ? "ok" : run["ok"] == false ? "FAILED \(run["error"].stringValue ?? "")" : "running"
                let ms = run["ms"].doubleValue.map { MacroValue.formatNumber($0) + " ms" } ?? ""
                print("\(run["id"].intValue ?? 0)\t\(run["started"].stringValue ?? "")\t\(run["macro"].stringValue ?? "")\t\(run["origin"].stringValue ?? "")\t\(ms)\t\(outcome)")
            }
        } catch let error as RPCError { throw DaemonLink.report(error) }
    }

    private func show(_ client: RPCClient, _ id: Int) throws {
        let run = try client.call(.runGet, ["id": .number(Double(id))])
        if options.json { return print(run.jsonText()) }
        print(
            "run \(id): \(run["macro"].stringValue ?? "") (version \(run["version"].stringValue ?? "?")), started \(run["started"].stringValue ?? "") by \(run["origin"].stringValue ?? "")"
        )
        print("arguments: \(run["arguments"].jsonText())")
        let error = run["error"]
        if case .object = error {
            let location = error["location"].stringValue.map { "\($0): " } ?? ""
            print("error: \(location)\(error["name"].stringValue.map { "\($0): " } ?? "")\(error["message"].stringValue ?? "")")
        } else {
            print("result: \(run["result"].jsonText())")
        }
        for line in run["console"].arrayValue ?? [] { print("console.\(line["level"].stringValue ?? "log"): \(line["message"].stringValue ?? "")") }
        for change in run["changes"].arrayValue ?? [] {
            let kept = change["kept"] == true ? "" : " (rolled back)"
            print("\(change["channel"].stringValue ?? ""): \(change["from"].jsonText()) -> \(change["to"].jsonText())\(kept)")
        }
        for edit in run["storeChanges"].arrayValue ?? [] {
            let kept = edit["kept"] == true ? "" : " (rolled back)"
            let from = edit["from"] == .undefined ? "(unset)" : edit["from"].jsonText()
            let to = edit["to"] == .undefined ? "(deleted)" : edit["to"].jsonText()
            print("store \(edit["key"].stringValue ?? ""): \(from) -> \(to)\(kept)")
        }
        let timings = run["timings"]
        let turns = timings["turns"].arrayValue ?? []
        print(
            "time: \(timings["totalMs"].doubleValue.map { MacroValue.formatNumber($0) } ?? "?") ms, \(timings["javascriptMs"].doubleValue.map { MacroValue.formatNumber($0) } ?? "?") ms in JavaScript over \(turns.count) turn(s)"
        )
    }
}
