import ArgumentParser
import MacroBase
import MacroRPC

/// `macro list`.
package struct List: ParsableCommand {
    package static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List the macros, lib files and resources: name, status (ok or error), file, the error for broken ones, and what each imports.",
        discussion: """
            Asks the daemon when one answers (what it has loaded), else reads the macros \
            directory. Lib files (macros/lib/*.js, scripts or modules) are listed after the \
            macros as lib/NAME, then the data files of macros/resources/ as resources/NAME. \
            Under a file that imports modules or is imported, a line says which.
            """)

    @OptionGroup var daemon: DaemonOptions
    @OptionGroup var local: LocalOptions

    package var options: EngineOptions { EngineOptions(daemon, local) }

    package init() {}

    package func run() throws {
        guard let client = try DaemonLink.connect(options) else { return try InProcess.run(self) }
        let (entries, directory) = try Self.entries(from: client)
        show(entries, from: directory)
    }

    /// Prints `entries` as a table (or JSON); `directory` names where they come from.
    package func show(_ entries: [MacroValue], from directory: String) {
        if options.json {
            Console.printJSON(.array(entries))
            return
        }
        if entries.isEmpty {
            Console.error("no macros in \(directory)")
            return
        }
        let width = max(4, entries.compactMap(\.["name"].stringValue).map(\.count).max() ?? 0)
        let statusWidth = entries.contains { $0["quarantined"] == .bool(true) } ? 11 : 6
        print("NAME".padding(toLength: width, withPad: " ", startingAt: 0) + "  " + "STATUS".padding(toLength: statusWidth, withPad: " ", startingAt: 0) + "  FILE")
        for entry in entries {
            let name = entry["name"].stringValue ?? ""
            let status = entry["quarantined"] == .bool(true) ? "quarantined" : entry["status"].stringValue ?? ""
            var line = name.padding(toLength: width, withPad: " ", startingAt: 0) + "  "
            line += status.padding(toLength: statusWidth, withPad: " ", startingAt: 0) + "  " + (entry["file"].stringValue ?? "")
            if let error = Self.diagnostic(entry) {
                line += "\n" + String(repeating: " ", count: width + statusWidth + 4) + error
            }
            if let links = Self.links(entry) {
                line += "\n" + String(repeating: " ", count: width + statusWidth + 4) + links
            }
            if let triggers = entry["triggers"].arrayValue, !triggers.isEmpty {
                let mode = entry["mode"]["mode"].stringValue.map { " (\($0))" } ?? ""
                line += "\n" + String(repeating: " ", count: width + statusWidth + 4) + "triggers\(mode): " + triggers.map { $0.jsonText(pretty: false) }.joined(separator: ", ")
            }
            print(line)
        }
    }

    /// Every macro then every lib file, as the daemon has loaded them (`macro.list`), and where
    /// they come from.
    static func entries(from client: RPCClient) throws -> ([MacroValue], String) {
        do {
            let list = try client.call(.list).arrayValue ?? []
            return (list, "the daemon at \(client.path)")
        } catch let error as RPCError { throw DaemonLink.report(error) }
    }

    /// `imports lib/rings; imported by bump, fill` of an entry with imports or importers.
    package static func links(_ entry: MacroValue) -> String? {
        let imports = entry["imports"].arrayValue?.compactMap(\.stringValue) ?? []
        let importers = entry["importers"].arrayValue?.compactMap(\.stringValue) ?? []
        var parts: [String] = []
        if !imports.isEmpty { parts.append("imports " + imports.joined(separator: ", ")) }
        if !importers.isEmpty { parts.append("imported by " + importers.joined(separator: ", ")) }
        return parts.isEmpty ? nil : parts.joined(separator: "; ")
    }

    /// `file:line:col: error: message` of a broken entry.
    package static func diagnostic(_ entry: MacroValue) -> String? {
        let error = entry["error"]
        guard let message = error["message"].stringValue else { return nil }
        var position = error["file"].stringValue ?? entry["file"].stringValue ?? entry["name"].stringValue ?? ""
        if let line = error["line"].intValue {
            position += ":\(line)"
            if let column = error["column"].intValue { position += ":\(column)" }
        }
        return "\(position): error: \(message)"
    }
}
