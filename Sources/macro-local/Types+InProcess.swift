import MacroCLI
import MacroEngineCore

/// `macro types` in this process: the declarations of an engine loaded with the macros directory.
extension Types: InProcessCommand {
    func runInProcess() throws {
        let session = try Session(options: options, loadState: false)
        let entries = (try? session.library.reload()) ?? []
        let names = entries.filter { $0.version > 0 }.map(\.name)
        show(try session.engine.typeDeclarations(channels: session.config.channels, macros: names))
    }
}
