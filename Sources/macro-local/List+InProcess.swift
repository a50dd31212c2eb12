import MacroCLI
import MacroEngineCore
import MacroRPC

/// `macro list` in this process: the macros directory's files, loaded.
extension List: InProcessCommand {
    func runInProcess() throws {
        let (entries, directory) = try Self.localEntries(options)
        show(entries, from: directory)
    }

    /// Every macro then every lib file of the macros directory, loaded in-process, as
    /// `macro.list` entries, and the directory.
    static func localEntries(_ options: EngineOptions) throws -> ([MacroValue], String) {
        let session = try Session(options: options, loadState: false)
        do {
            try session.library.reload()
        } catch let error as MacroError {
            throw Failure(exit: 66, kind: "noSuchMacro", message: error.message)
        }
        return (session.library.listing(), session.library.directory)
    }

    /// An entry as `macro.list` gives it (``MacroEntry/listJSON(kind:)``, the same as macrod's).
    static func json(_ entry: MacroEntry, kind: String) -> MacroValue { entry.listJSON(kind: kind) }
}
