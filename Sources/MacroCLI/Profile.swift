import ArgumentParser
import Foundation
import MacroBase
import MacroRPC

#if canImport(Glibc)
import Glibc
#endif

/// `macro profile NAME [ARG...] [--runs N] [--format svg|folded|cpuprofile] [--output FILE]`:
/// runs the macro under JavaScriptCore's sampling profiler, in the daemon (`macro.profile`) or
/// in-process (`--local`, or no daemon: `macro-local`, `Profile+InProcess.swift`), and writes a
/// flame graph (SVG, default `NAME.profile.svg`), the folded stacks, or a `.cpuprofile`. Both
/// ways give the same answer (`{name, runs, samples, dropped, folded, macrosDir}`), written by ``write(_:)``.
package struct Profile: ParsableCommand {
    package static let configuration = CommandConfiguration(
        commandName: "profile",
        abstract: "Profile a macro with JavaScriptCore's sampling profiler: a flame graph (SVG), folded stacks or a .cpuprofile.",
        discussion: """
            Runs the macro N times, one after the other, in the daemon, or in this process with \
            --local (or when no daemon answers; the progress values it changes are then not saved). \
            In the daemon the runs are real calls: what they change in the progress values is \
            kept, as after N `macro run`s (the debugger, by contrast, works on a copy). \
            JavaScriptCore samples about once a millisecond of JavaScript: a macro that runs for \
            microseconds needs thousands of runs to show up (0 samples exits 65 and says how many). \
            Frames are `function (file:line)` for every function of a macro or lib file (the file \
            relative to the macros directory, the line where the function is defined), built-ins \
            and native functions by name (`map`, `sqrt`, `setInnerProgress`); the engine's own \
            helpers (the hardened built-ins' accessors, its call and console wrappers, `(program)`) \
            are folded into their callers. Default output: NAME.profile.svg, NAME.profile.folded \
            or NAME.cpuprofile; --output - writes to stdout; --json prints the answer of \
            macro.profile ({name, runs, samples, dropped, folded, macrosDir}) instead.

            \(Exit.table(of: [0, 64, 65, 66, 69, 70, 74, 75, 77, 78]))
            """)
    @Argument(help: "The macro's name.", completion: .custom(Completions.macroNames)) package var name: String
    @Argument(help: ArgumentHelp("Arguments for the macro: JSON when valid, else strings (after `--` every word is one).", valueName: "arg")) var arguments: [String] = []
    @Option(name: .long, help: ArgumentHelp("How many times to run it, one after the other, 1...100000.", valueName: "n")) package var runs: Int = 10
    @Option(name: .long, help: ArgumentHelp("svg (a flame graph, the default), folded (flamegraph.pl's input) or cpuprofile (Chrome DevTools, speedscope).", valueName: "format"))
    var format: String = "svg"
    @Option(name: .long, help: ArgumentHelp("The file to write (default NAME.profile.svg, NAME.profile.folded, NAME.cpuprofile; - for stdout).", valueName: "file")) var output:
        String?
    @OptionGroup var daemon: DaemonOptions
    @OptionGroup var local: LocalOptions
    @OptionGroup var stateOption: StateOption
    @OptionGroup var timeout: TimeoutOption
    package var options: EngineOptions { EngineOptions(daemon, local, state: stateOption, timeout: timeout) }

    /// The macro's arguments: each word as JSON when it is valid JSON, else as a string.
    package var values: [MacroValue] { arguments.map { (try? MacroValue(jsonText: $0)) ?? .string($0) } }

    package init() {}

    package func validate() throws {
        guard (1...ProfileLimits.maximumRuns).contains(runs) else {
            throw ValidationError("--runs must be between 1 and \(ProfileLimits.maximumRuns), got \(runs)")
        }
        guard ["folded", "svg", "cpuprofile"].contains(format) else { throw ValidationError("--format must be svg, folded or cpuprofile, got '\(format)'") }
        _ = try timeout.validated()
    }

    package func run() throws {
        guard let client = try DaemonLink.connect(options) else { return try InProcess.run(self) }
        var params: OrderedFields = ["name": .string(name), "args": .array(values), "runs": .number(Double(runs))]
        if let timeoutMs = options.timeoutMs { params["timeoutMs"] = .number(Double(timeoutMs)) }
        // Runs can take seconds: say what is going on (on a terminal only, so scripts read the result line alone).
        if isatty(STDERR_FILENO) != 0 { Console.error("profiling \(name): \(runs) run(s) in macrod...") }
        do {
            try write(client.call(.profile, .object(params)))
        } catch let error as RPCError { throw DaemonLink.report(error) }
    }

    /// Writes `macro.profile`'s answer in the chosen format (`--json`: the answer itself).
    package func write(_ result: MacroValue) throws {
        if options.json {
            print(result.jsonText())
            return
        }
        let folded = result["folded"].stringValue ?? ""
        let text: String
        switch format {
        case "folded": text = folded
        case "cpuprofile": text = FlameGraph.cpuprofile(folded, directory: result["macrosDir"].stringValue).jsonText() + "\n"
        default: text = FlameGraph.svg(folded, title: "macro profile \(name) (\(runs) run(s))")
        }
        let path = output ?? "\(name)." + (format == "cpuprofile" ? "cpuprofile" : "profile.\(format)")
        if path == "-" {
            print(text, terminator: "")
            return
        }
        try Self.writeFile(path, text)
        // Samples JavaScriptCore drew above a caller that was not calling (a stale frame): left out.
        let dropped = result["dropped"].intValue ?? 0
        let note = dropped > 0 ? " (\(dropped) more left out: JavaScriptCore could not place them)" : ""
        let samples = result["samples"].intValue ?? 0
        Console.error("\(samples) samples of \(runs) run(s) written to \(path)\(note)")
        if samples == 0 {
            // About one sample per millisecond of JavaScript: these runs took less than one in all.
            throw Failure(exit: 65, kind: "threw", message: ProfileLimits.noSamplesMessage(runs: runs, name: name))
        }
    }

    /// Writes `text` to `path` with open(2)/write(2), so a failure names its reason as the
    /// system does (exit 74).
    static func writeFile(_ path: String, _ text: String) throws {
        let bytes = Array(text.utf8)
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o666)
        var written = 0
        var failure: Int32?
        if fd < 0 { failure = errno }
        while failure == nil, written < bytes.count {
            let count = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + written, bytes.count - written) }
            if count < 0, errno != EINTR { failure = errno } else if count > 0 { written += count }
        }
        if fd >= 0, close(fd) != 0, failure == nil { failure = errno }
        if let failure {
            throw Failure(exit: 74, kind: "io", message: "cannot write \(path): \(String(cString: strerror(failure)))")
        }
    }
}
