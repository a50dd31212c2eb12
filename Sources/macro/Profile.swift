import ArgumentParser
import Foundation
import MacroEngineCore
import MacroRPC

/// `macro profile NAME [ARG...] [--runs N] [--format folded] [--output FILE]`: runs the macro in
/// the daemon under JavaScriptCore's sampling profiler (`macro.profile`) and writes the folded
/// stacks flame graph tools read.
struct Profile: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Profile a macro in the daemon with JavaScriptCore's sampling profiler; prints folded stacks (flamegraph.pl, speedscope).",
        discussion: "Frames are `function (file:line)` for a macro's own function, `function (line N)` for others; the engine's helpers are folded away. Only --format folded is implemented so far; svg and cpuprofile exit 64.")
    @Argument(help: "The macro's name.") var name: String
    @Argument(help: ArgumentHelp("Arguments for the macro: JSON when valid, else strings (after `--` every word is one).", valueName: "arg")) var arguments: [String] = []
    @Option(name: .long, help: ArgumentHelp("How many times to run it, one after the other (default 10).", valueName: "n")) var runs: Int = 10
    @Option(name: .long, help: ArgumentHelp("folded (implemented), svg or cpuprofile (not yet).", valueName: "format")) var format: String = "folded"
    @Option(name: .long, help: ArgumentHelp("Write to this file instead of stdout.", valueName: "file")) var output: String?
    @OptionGroup var daemon: DaemonOptions
    var options: EngineOptions { EngineOptions(daemon) }

    func validate() throws {
        guard (1...100_000).contains(runs) else { throw ValidationError("--runs must be between 1 and 100000, got \(runs)") }
        guard ["folded", "svg", "cpuprofile"].contains(format) else { throw ValidationError("--format must be svg, folded or cpuprofile, got '\(format)'") }
        guard format == "folded" else { throw ValidationError("--format \(format) is not implemented yet; use --format folded") }
    }

    func run() throws {
        let client = try DaemonLink.require(options, for: "profile")
        let args: [MacroValue] = arguments.map { (try? MacroValue(jsonText: $0)) ?? .string($0) }
        let result: MacroValue
        do {
            result = try client.call("macro.profile", ["name": .string(name), "args": .array(args), "runs": .number(Double(runs))])
        } catch let error as RPCError { throw DaemonLink.report(error) }
        if options.json {
            print(result.jsonText())
            return
        }
        let folded = result["folded"].stringValue ?? ""
        if let output {
            try Data(folded.utf8).write(to: URL(fileURLWithPath: output))
            Console.error("\(result["samples"].intValue ?? 0) samples of \(runs) run(s) written to \(output)")
        } else {
            print(folded, terminator: "")
        }
    }
}
