import ArgumentParser
import Foundation
import MacroBase
import MacroRPC

/// `macro check [FILE...]`.
package struct Check: ParsableCommand {
    package static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Check macro and lib files without running them.",
        discussion: """
            Loads each file as the engine would (UTF-8, syntax, one function expression, a \
            valid name that does not shadow an engine global; a file in a lib/ directory as a \
            lib script or module, with what it imports) and prints each problem \
            compiler-style on stderr:

                macros/broken.js:2:11: error: SyntaxError: Unexpected token ';'

            so editors and CI jobs can jump to it. A module that does not load is reported with \
            each file that imports it, at that file's import. Exits 1 when any file has an error, 0 \
            otherwise. Without FILE, checks every macro and lib file: as the daemon loaded \
            them when one answers, else the macros directory's files.
            """)

    @Argument(help: "Files to check (default: every macro and lib file).", completion: .file(extensions: ["js"]))
    package var files: [String] = []

    @OptionGroup var daemon: DaemonOptions
    @OptionGroup var local: LocalOptions

    package var options: EngineOptions { EngineOptions(daemon, local) }

    package init() {}

    package func run() throws {
        // Files named on the command line are always checked in-process.
        guard files.isEmpty, let client = try DaemonLink.connect(options) else { return try InProcess.run(self) }
        try report(try List.entries(from: client).0)
    }

    /// Prints each broken entry compiler-style on stderr (and every entry as JSON with
    /// `--json`), then a count; exits 1 when any is broken.
    package func report(_ entries: [MacroValue]) throws {
        let broken = entries.filter { $0["status"] == "error" }
        for entry in broken {
            if let line = List.diagnostic(entry) { Console.error(line) }
        }
        if options.json { Console.printJSON(.array(entries)) }
        Console.error("checked \(entries.count) file\(entries.count == 1 ? "" : "s"): \(broken.count) error\(broken.count == 1 ? "" : "s")")
        if !broken.isEmpty { throw ExitCode(1) }
    }
}
