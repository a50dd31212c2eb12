import ArgumentParser
import MacroEngineCore

/// `macro types`.
struct Types: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print TypeScript declarations (.d.ts) of every global a macro can use.",
        discussion: """
            Covers the progress functions and object, sleep, the timers, console, the functions \
            of macros/lib, and each loaded macro with its parameter names. Save it next to the \
            macros so an editor autocompletes and type-checks them:

                macro types > macros/globals.d.ts
            """)

    @OptionGroup var options: EngineOptions

    func run() throws {
        let session = try Session(options: options, loadState: false)
        let entries = (try? session.library.reload()) ?? []
        let names = entries.filter { $0.version > 0 }.map(\.name)
        print(try session.engine.typeDeclarations(channels: session.config.channels, macros: names), terminator: "")
    }
}
