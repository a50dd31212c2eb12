import ArgumentParser
import Foundation
import MacroEngineCore

/// `macro show NAME`.
struct Show: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Print a macro's source.")

    @Argument(help: "The macro's name.")
    var name: String

    @OptionGroup var options: EngineOptions

    func run() throws {
        let config = try options.resolvedConfig()
        guard MacroName.isIdentifier(name) else {
            Console.error("macro: '\(name)' is not a valid macro name")
            throw Exit.noSuchMacro
        }
        let path = "\(config.macrosDirectory)/\(name).js"
        guard let data = FileManager.default.contents(atPath: path) else {
            Console.error("macro: no macro named '\(name)' (no file \(path))")
            throw Exit.noSuchMacro
        }
        if options.json {
            let source = String(decoding: data, as: UTF8.self)
            print(MacroValue.object(["name": .string(name), "file": .string(path), "source": .string(source)]).jsonText())
        } else {
            FileHandle.standardOutput.write(data)
        }
    }
}
