import Foundation
import MacroCLI
import MacroEngineCore

/// `macro check` in this process: the macros directory's files, or the files named.
extension Check: InProcessCommand {
    func runInProcess() throws {
        let entries: [MacroValue]
        if files.isEmpty {
            entries = try List.localEntries(options).0
        } else {
            let session = try Session(options: options, loadState: false, needsDirectory: false)
            entries = files.map { check(file: $0, session: session) }
        }
        try report(entries)
    }

    /// Loads one file: as a lib script when it sits in a `lib` directory, else as a macro.
    private func check(file: String, session: Session) -> MacroValue {
        guard FileManager.default.fileExists(atPath: file) else {
            return ["name": .string(file), "kind": "macro", "status": "error", "file": .string(file), "version": 0, "error": ["message": "no such file"]]
        }
        let directory = (file as NSString).deletingLastPathComponent
        if (directory as NSString).lastPathComponent == "lib" {
            let library = MacroLibrary(directory: (directory as NSString).deletingLastPathComponent, engine: session.engine, logger: session.logger)
            let target = (file as NSString).lastPathComponent
            if let entry = library.reloadLib().first(where: { ($0.file as NSString).lastPathComponent == target }) {
                var json = List.json(entry, kind: "lib")
                if case .object(var fields) = json { fields["file"] = .string(file); json = .object(fields) }
                return json
            }
        }
        let library = MacroLibrary(directory: directory.isEmpty ? "." : directory, engine: session.engine, logger: session.logger)
        return List.json(library.load(file: file, requireInsideDirectory: false), kind: "macro")
    }
}
