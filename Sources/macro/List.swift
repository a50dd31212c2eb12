import ArgumentParser
import MacroEngineCore
import MacroRPC

/// `macro list`.
struct List: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the macros and lib files: name, status (ok or error), file, and the error for broken ones.",
        discussion: """
            Asks the daemon when one answers (what it has loaded), else reads the macros \
            directory. Lib files (macros/lib/*.js) are listed after the macros as lib/NAME.
            """)

    @OptionGroup var daemon: DaemonOptions
    @OptionGroup var local: LocalOptions

    var options: EngineOptions { EngineOptions(daemon, local) }

    func run() throws {
        let (entries, directory) = try Self.entries(options)
        if options.json {
            Console.printJSON(.array(entries))
            return
        }
        if entries.isEmpty {
            Console.error("no macros in \(directory)")
            return
        }
        let width = max(4, entries.compactMap(\.["name"].stringValue).map(\.count).max() ?? 0)
        print("NAME".padding(toLength: width, withPad: " ", startingAt: 0) + "  STATUS  FILE")
        for entry in entries {
            let name = entry["name"].stringValue ?? "", status = entry["status"].stringValue ?? ""
            var line = name.padding(toLength: width, withPad: " ", startingAt: 0) + "  "
            line += status.padding(toLength: 6, withPad: " ", startingAt: 0) + "  " + (entry["file"].stringValue ?? "")
            if let error = Self.diagnostic(entry) {
                line += "\n" + String(repeating: " ", count: width + 10) + error
            }
            print(line)
        }
    }

    /// Every macro then every lib file, as `macro.list` entries, and where they come from: the
    /// daemon's view when one answers, else the files (loaded in-process).
    static func entries(_ options: EngineOptions) throws -> ([MacroValue], String) {
        if let client = try DaemonLink.connect(options) {
            do {
                let list = try client.call("macro.list").arrayValue ?? []
                return (list, "the daemon at \(client.path)")
            } catch let error as RPCError { throw DaemonLink.report(error) }
        }
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

    /// `file:line:col: error: message` of a broken entry.
    static func diagnostic(_ entry: MacroValue) -> String? {
        let error = entry["error"]
        guard let message = error["message"].stringValue else { return nil }
        var position = entry["file"].stringValue ?? entry["name"].stringValue ?? ""
        if let line = error["line"].intValue {
            position += ":\(line)"
            if let column = error["column"].intValue { position += ":\(column)" }
        }
        return "\(position): error: \(message)"
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
