import ArgumentParser
import Foundation
import MacroEngineCore

/// `macro check [FILE...]`.
struct Check: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check macro files without running them.",
        discussion: """
            Loads each file as the engine would (UTF-8, syntax, one function expression, a \
            valid name that does not shadow an engine global) and prints each problem \
            compiler-style on stderr:

                macros/broken.js:2:11: error: SyntaxError: Unexpected token ';'

            so editors and CI jobs can jump to it. Exits 1 when any file has an error, 0 \
            otherwise. Without FILE, checks every macro in the macros directory.
            """)

    @Argument(help: "Files to check (default: every .js file of the macros directory).")
    var files: [String] = []

    @OptionGroup var options: EngineOptions

    func run() throws {
        let session = try Session(options: options, loadState: false, needsDirectory: files.isEmpty)
        var entries: [MacroEntry] = []
        if files.isEmpty {
            do {
                entries = try session.library.reload()
            } catch let error as MacroError {
                Console.error("macro: \(error.message)")
                throw Exit.noSuchMacro
            }
        } else {
            for file in files {
                guard FileManager.default.fileExists(atPath: file) else {
                    Console.error("\(file): error: no such file")
                    entries.append(MacroEntry(
                        name: file, file: file, status: .error,
                        error: MacroError(code: .io, message: "no such file", file: file), version: 0))
                    continue
                }
                let directory = (file as NSString).deletingLastPathComponent
                let library = MacroLibrary(directory: directory.isEmpty ? "." : directory, engine: session.engine, logger: session.logger)
                entries.append(library.load(file: file, requireInsideDirectory: false))
            }
        }
        let broken = entries.filter { $0.status == .error }
        for entry in broken {
            guard let error = entry.error, error.file != nil || !files.isEmpty else { continue }
            if error.message == "no such file" { continue }
            Console.error(error.description)
        }
        if options.json {
            print(MacroValue.array(entries.map(List.json)).jsonText())
        }
        Console.error("checked \(entries.count) file\(entries.count == 1 ? "" : "s"): \(broken.count) error\(broken.count == 1 ? "" : "s")")
        if !broken.isEmpty { throw Exit.checkFailed }
    }
}
