import ArgumentParser
import Foundation
import MacroEngineCore
import MacroRPC

/// `macro check [FILE...]`.
struct Check: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check macro and lib files without running them.",
        discussion: """
            Loads each file as the engine would (UTF-8, syntax, one function expression, a \
            valid name that does not shadow an engine global; a file in a lib/ directory as a \
            lib script) and prints each problem compiler-style on stderr:

                macros/broken.js:2:11: error: SyntaxError: Unexpected token ';'

            so editors and CI jobs can jump to it. Exits 1 when any file has an error, 0 \
            otherwise. Without FILE, checks every macro and lib file: as the daemon loaded \
            them when one answers, else the macros directory's files.
            """)

    @Argument(help: "Files to check (default: every macro and lib file).", completion: .file(extensions: ["js"]))
    var files: [String] = []

    @OptionGroup var daemon: DaemonOptions
    @OptionGroup var local: LocalOptions

    var options: EngineOptions { EngineOptions(daemon, local) }

    func run() throws {
        let entries: [MacroValue]
        if files.isEmpty {
            entries = try List.entries(options).0
        } else {
            let session = try Session(options: options, loadState: false, needsDirectory: false)
            entries = files.map { check(file: $0, session: session) }
        }
        let broken = entries.filter { $0["status"] == "error" }
        for entry in broken {
            if let line = List.diagnostic(entry) { Console.error(line) }
        }
        if options.json { Console.printJSON(.array(entries)) }
        Console.error("checked \(entries.count) file\(entries.count == 1 ? "" : "s"): \(broken.count) error\(broken.count == 1 ? "" : "s")")
        if !broken.isEmpty { throw ExitCode(1) }
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
