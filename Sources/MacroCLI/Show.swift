import ArgumentParser
import Foundation
import MacroBase
import MacroRPC

/// `macro show NAME`.
struct Show: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract: "Print a macro's or lib file's source (from the daemon when one answers, else the file).",
        discussion: """
            With a daemon, what the file imports and which files import it are printed to \
            stderr (so the source on stdout stays as the file holds it), and are in --json.
            """)

    @Argument(help: "The macro's name.", completion: .custom(Completions.macroNames))
    var name: String

    @OptionGroup var daemon: DaemonOptions
    @OptionGroup var local: LocalOptions

    var options: EngineOptions { EngineOptions(daemon, local) }

    func run() throws {
        // A macro, or a lib file as `macro list` names it (`lib/rings`).
        let isLib = name.hasPrefix("lib/")
        guard MacroName.isIdentifier(isLib ? String(name.dropFirst(4)) : name) else {
            throw Failure(exit: 66, kind: "noSuchMacro", message: "'\(name)' is not a valid macro name (or lib/NAME for a lib file)")
        }
        let source: String, file: String
        var entry: MacroValue = .null
        if let client = try DaemonLink.connect(options) {
            do {
                source = try client.call(.source, ["name": .string(name)])["source"].stringValue ?? ""
                let entries = try client.call(.list).arrayValue ?? []
                let macrosDir = try client.call(.status)["macrosDir"].stringValue ?? "macros"
                entry = entries.first { $0["name"] == .string(name) } ?? .null
                file = entry["file"].stringValue ?? "\(macrosDir)/\(name).js"
            } catch let error as RPCError { throw DaemonLink.report(error) }
        } else {
            let config = try options.resolvedConfig()
            file = isLib ? "\(config.macrosDirectory)/lib/\(name.dropFirst(4)).js" : "\(config.macrosDirectory)/\(name).js"
            guard let data = FileManager.default.contents(atPath: file) else {
                throw Failure(exit: 66, kind: "noSuchMacro", message: "no macro named '\(name)' (no file \(file))")
            }
            source = String(decoding: data, as: UTF8.self)
        }
        if options.json {
            var fields: OrderedFields = ["name": .string(name), "file": .string(file), "source": .string(source)]
            if !entry["imports"].isNullish { fields["imports"] = entry["imports"] }
            if !entry["importers"].isNullish { fields["importers"] = entry["importers"] }
            if !entry["triggers"].isNullish { fields["triggers"] = entry["triggers"] }
            Console.printJSON(.object(fields))
        } else {
            if let links = List.links(entry) { FileHandle.standardError.write(Data("\(name): \(links)\n".utf8)) }
            FileHandle.standardOutput.write(Data(source.utf8))
        }
    }
}
