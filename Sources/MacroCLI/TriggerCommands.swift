import ArgumentParser
import Foundation
import MacroBase
import MacroRPC

/// `macro trigger NAME [--event JSON]`.
struct Trigger: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "trigger",
        abstract: "Fire a macro's trigger now, with a synthetic event, in the daemon.",
        discussion: """
            Runs the macro as its triggers would, at once, under its run mode (single drops \
            the fire while a triggered run is going, queued waits, ...), with `event.kind` set \
            to "manual": a schedule is tested without waiting for it. Prints the call id, or why \
            the fire was dropped. The run's result goes to the log and to `macro triggers`.

            Examples:
              macro trigger tick
              macro trigger onInner --event '{"channel": "inner", "old": 1, "new": 2}'
            """)
    @Argument(help: "The macro's name.", completion: .custom(Completions.macroNames)) var name: String
    @Option(help: "The event object the macro gets (JSON; kind is set to \"manual\").") var event: String?
    @OptionGroup var daemon: DaemonOptions
    var options: EngineOptions { EngineOptions(daemon) }

    func run() throws {
        var params: OrderedFields = ["name": .string(name)]
        if let event {
            guard case .object? = try? MacroValue(jsonText: event) else {
                throw Failure(exit: 64, kind: "usage", message: "--event must be a JSON object, such as '{\"value\": 3}'")
            }
            params["event"] = try MacroValue(jsonText: event)
        }
        let client = try DaemonLink.require(options, for: "trigger")
        do {
            let result = try client.call(.trigger, .object(params))
            if options.json { return Console.printJSON(result) }
            switch result["outcome"].stringValue {
            case "started": print("\(name): started as call \(result["call"].intValue ?? 0)")
            case "queued": print("\(name): queued behind the run that is going")
            default: print("\(name): dropped (\(result["reason"].stringValue ?? "by its run mode"))")
            }
        } catch let error as RPCError { throw DaemonLink.report(error) }
    }
}

/// `macro triggers [NAME]`.
struct Triggers: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "triggers",
        abstract: "Show the macros' triggers: kind and spec, next fire time, last run, counts.",
        discussion: """
            A macro declares its triggers in its file (docs/macros.md, "Triggers"):

                export const triggers = [{ every: "5s" }, { watch: "inner" }];
                export const mode = "single";
                export default function tick(event) { ... }
            """)
    @Argument(help: "Only this macro.", completion: .custom(Completions.macroNames)) var name: String?
    @OptionGroup var daemon: DaemonOptions
    var options: EngineOptions { EngineOptions(daemon) }

    func run() throws {
        let client = try DaemonLink.require(options, for: "triggers")
        do {
            let list = try client.call(.triggers, name.map { ["name": .string($0)] } ?? [:]).arrayValue ?? []
            if options.json { return Console.printJSON(.array(list)) }
            if list.isEmpty { return Console.error(name.map { "\($0) has no triggers" } ?? "no macro has triggers") }
            for entry in list {
                let mode = entry["mode"]["mode"].stringValue ?? "single"
                let bound = entry["mode"]["max"].intValue.map { " max \($0)" } ?? ""
                let paused = entry["paused"].stringValue.map { "  PAUSED: \($0)" } ?? ""
                print(
                    "\(entry["name"].stringValue ?? "")  mode \(mode)\(bound)  fired \(entry["fired"].intValue ?? 0), dropped \(entry["dropped"].intValue ?? 0), failed \(entry["failed"].intValue ?? 0)\(paused)"
                )
                for trigger in entry["triggers"].arrayValue ?? [] {
                    let next = trigger["next"].stringValue.map { "  next \($0)" } ?? ""
                    print("  \(trigger["spec"].jsonText(pretty: false))\(next)")
                }
                let last = entry["lastRun"]
                if let at = last["at"].stringValue {
                    print(
                        "  last run \(at), \(last["ms"].doubleValue.map { MacroValue.formatNumber($0) } ?? "?") ms, \(last["ok"] == true ? "ok" : "failed"): \(last["result"].stringValue ?? "")"
                    )
                }
            }
        } catch let error as RPCError { throw DaemonLink.report(error) }
    }
}
