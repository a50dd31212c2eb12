import ArgumentParser
import MacroEngineCore

/// `macro list`.
struct List: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the macros: name, status (ok or error), file, and the error for broken ones.")

    @OptionGroup var options: EngineOptions

    func run() throws {
        let session = try Session(options: options, loadState: false)
        let entries: [MacroEntry]
        do {
            entries = try session.library.reload()
        } catch let error as MacroError {
            Console.error("macro: \(error.message)")
            throw Exit.noSuchMacro
        }
        if options.json {
            print(MacroValue.array(entries.map(Self.json)).jsonText())
            return
        }
        if entries.isEmpty {
            Console.error("no macros in \(session.library.directory)")
            return
        }
        let width = max(4, entries.map(\.name.count).max() ?? 0)
        print("NAME".padding(toLength: width, withPad: " ", startingAt: 0) + "  STATUS  FILE")
        for entry in entries {
            var line = entry.name.padding(toLength: width, withPad: " ", startingAt: 0) + "  "
            line += entry.status.rawValue.padding(toLength: 6, withPad: " ", startingAt: 0) + "  " + entry.file
            if let error = entry.error {
                line += "\n" + String(repeating: " ", count: width + 10) + error.description
            }
            print(line)
        }
    }

    static func json(_ entry: MacroEntry) -> MacroValue {
        var fields: MacroValue = [
            "name": .string(entry.name), "status": .string(entry.status.rawValue),
            "file": .string(entry.file), "version": .number(Double(entry.version)),
        ]
        if let error = entry.error, case .object(var object) = fields {
            var detail: MacroValue = ["message": .string(error.headline)]
            if case .object(var d) = detail {
                if let line = error.line { d["line"] = .number(Double(line)) }
                if let column = error.column { d["column"] = .number(Double(column)) }
                detail = .object(d)
            }
            object["error"] = detail
            fields = .object(object)
        }
        return fields
    }
}
