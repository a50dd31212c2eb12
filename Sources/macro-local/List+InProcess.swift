import MacroCLI
import MacroRPC
import MacroEngineCore

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
        let macros: [MacroEntry]
        do {
            macros = try session.library.reload()
        } catch let error as MacroError {
            throw Failure(exit: 66, kind: "noSuchMacro", message: error.message)
        }
        let libs = session.library.libEntries
        return (macros.map { json($0, kind: "macro") } + libs.map { json($0, kind: "lib") }, session.library.directory)
    }

    /// An entry as `macro.list` gives it.
    static func json(_ entry: MacroEntry, kind: String) -> MacroValue {
        var fields: OrderedFields = [
            "name": .string(entry.name), "kind": .string(kind), "status": .string(entry.status.rawValue),
            "file": .string(entry.file), "version": .number(Double(entry.version)),
        ]
        if let error = entry.error {
            var detail: OrderedFields = ["message": .string(error.headline)]
            if let line = error.line { detail["line"] = .number(Double(line)) }
            if let column = error.column { detail["column"] = .number(Double(column)) }
            fields["error"] = .object(detail)
        }
        return .object(fields)
    }
}
