import ArgumentParser
import MacroBase
import MacroRPC

/// `macro types`.
package struct Types: ParsableCommand {
    package static let configuration = CommandConfiguration(
        commandName: "types",
        abstract: "Print TypeScript declarations (.d.ts) of the globals a macro can use.",
        discussion: """
            Covers the progress functions and object, sleep, the timers, console, and each \
            macro still written as a bare `function(...) {...}` with its parameter names. Lib \
            helpers and macros written as `function NAME(...) {...}` declare themselves: \
            macros/jsconfig.json puts them in the editor's project. From the daemon when one \
            answers, else from the files. Save it next to the macros so an editor autocompletes \
            and type-checks them (tsc -p macros/jsconfig.json):

                macro types > macros/globals.d.ts
            """)

    @OptionGroup var daemon: DaemonOptions
    @OptionGroup var local: LocalOptions

    package var options: EngineOptions { EngineOptions(daemon, local) }

    package init() {}

    package func run() throws {
        guard let client = try DaemonLink.connect(options) else { return try InProcess.run(self) }
        let source: String
        do { source = try client.call(.types)["source"].stringValue ?? "" } catch let error as RPCError { throw DaemonLink.report(error) }
        show(source)
    }

    /// Prints the declarations (as `{"source": ...}` with `--json`).
    package func show(_ source: String) {
        if options.json {
            Console.printJSON(.object(["source": .string(source)]))
        } else {
            print(source, terminator: "")
        }
    }
}
