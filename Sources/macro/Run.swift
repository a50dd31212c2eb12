import ArgumentParser
import Foundation
import MacroEngineCore

/// `macro run NAME [ARG...]`.
struct Run: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run a macro and print its result and the progress values after it.",
        discussion: """
            Each ARG is parsed as JSON when it is valid JSON (3, true, "text", [1,2], {"a":1}), \
            else passed as a string. The result is printed as JSON. Progress values are saved \
            to the state file after a successful run, so runs accumulate; a run that fails \
            (throws or times out) leaves the saved values unchanged.

            \(Exit.helpTable)
            """)

    @Argument(help: "The macro's name (the file name without .js).")
    var name: String

    @Argument(parsing: .allUnrecognized, help: "Arguments for the macro (JSON when valid, else strings; negative numbers work: bump inner -2).")
    var arguments: [String] = []

    @OptionGroup var options: EngineOptions

    func run() throws {
        let session = try Session(options: options)
        _ = try? session.library.reload()
        let args = arguments.map { (try? MacroValue(jsonText: $0)) ?? .string($0) }
        let result: MacroValue
        do {
            result = try session.library.call(name, arguments: args)
        } catch let error as MacroError {
            Console.report(error)
            if options.json { print(MacroValue.object(["error": Console.json(error)]).jsonText()) }
            throw Exit.code(for: error)
        }
        do {
            try session.store.save(session.model.valuesByName)
        } catch let error as MacroError {
            Console.error("macro: \(error.message)")
            printResult(result, session: session)
            throw Exit.ioError
        }
        printResult(result, session: session)
    }

    private func printResult(_ result: MacroValue, session: Session) {
        let values = session.model.values
        if options.json {
            var progress = MacroValue.object([:])
            if case .object(var fields) = progress {
                for (channel, value) in values { fields[channel] = .number(value) }
                progress = .object(fields)
            }
            let shown: MacroValue = result == .undefined ? .null : result
            print(MacroValue.object(["macro": .string(name), "result": shown, "progress": progress]).jsonText())
            return
        }
        print("result: \(result.jsonText())")
        let width = values.map(\.channel.count).max() ?? 0
        for (channel, value) in values {
            print("\(channel.padding(toLength: width, withPad: " ", startingAt: 0))  \(Console.format(value))")
        }
    }
}
