import ArgumentParser
import Foundation
import MacroEngineCore
import MacroRPC

/// `macro profile NAME [ARG...] [--runs N] [--format svg|folded|cpuprofile] [--output FILE]`:
/// runs the macro in the daemon under JavaScriptCore's sampling profiler (`macro.profile`) and
/// writes a flame graph (SVG, default `NAME.profile.svg`), the folded stacks, or a `.cpuprofile`.
struct Profile: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Profile a macro in the daemon with JavaScriptCore's sampling profiler: a flame graph (SVG), folded stacks or a .cpuprofile.",
        discussion: "Frames are `function (file:line)` for a macro's own function, `function (line N)` for others; the engine's helpers are folded away. Default output: NAME.profile.svg, NAME.profile.folded or NAME.cpuprofile; --output - writes to stdout.")
    @Argument(help: "The macro's name.") var name: String
    @Argument(help: ArgumentHelp("Arguments for the macro: JSON when valid, else strings (after `--` every word is one).", valueName: "arg")) var arguments: [String] = []
    @Option(name: .long, help: ArgumentHelp("How many times to run it, one after the other (default 10).", valueName: "n")) var runs: Int = 10
    @Option(name: .long, help: ArgumentHelp("svg (a flame graph, the default), folded (flamegraph.pl's input) or cpuprofile (Chrome DevTools, speedscope).", valueName: "format")) var format: String = "svg"
    @Option(name: .long, help: ArgumentHelp("The file to write (default NAME.profile.svg, NAME.profile.folded, NAME.cpuprofile; - for stdout).", valueName: "file")) var output: String?
    @OptionGroup var daemon: DaemonOptions
    var options: EngineOptions { EngineOptions(daemon) }

    func validate() throws {
        guard (1...100_000).contains(runs) else { throw ValidationError("--runs must be between 1 and 100000, got \(runs)") }
        guard ["folded", "svg", "cpuprofile"].contains(format) else { throw ValidationError("--format must be svg, folded or cpuprofile, got '\(format)'") }
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
        let text: String
        switch format {
        case "folded": text = folded
        case "cpuprofile": text = FlameGraph.cpuprofile(folded).jsonText() + "\n"
        default: text = FlameGraph.svg(folded, title: "macro profile \(name) (\(runs) run(s))")
        }
        let path = output ?? "\(name)." + (format == "cpuprofile" ? "cpuprofile" : "profile.\(format)")
        if path == "-" {
            print(text, terminator: "")
            return
        }
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        Console.error("\(result["samples"].intValue ?? 0) samples of \(runs) run(s) written to \(path)")
    }
}
