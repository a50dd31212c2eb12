import ArgumentParser
import MacroEngineCore
import MacroRPC

/// `macro types`.
struct Types: ParsableCommand {
    static let configuration = CommandConfiguration(
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

    var options: EngineOptions { EngineOptions(daemon, local) }

    func run() throws {
        let source: String
        if let client = try DaemonLink.connect(options) {
            do { source = try client.call("macro.types")["source"].stringValue ?? "" } catch let error as RPCError { throw DaemonLink.report(error) }
        } else {
            let session = try Session(options: options, loadState: false)
            let entries = (try? session.library.reload()) ?? []
            let names = entries.filter { $0.version > 0 }.map(\.name)
            source = try session.engine.typeDeclarations(channels: session.config.channels, macros: names)
        }
        if options.json {
            Console.printJSON(.object(["source": .string(source)]))
        } else {
            print(source, terminator: "")
        }
    }
}
