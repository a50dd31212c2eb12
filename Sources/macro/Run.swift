import ArgumentParser
import Foundation
import MacroEngineCore
import MacroRPC

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
        let args = arguments.map { (try? MacroValue(jsonText: $0)) ?? .string($0) }
        if let client = try DaemonLink.connect(options) {
            try runOnDaemon(client, args: args)
            return
        }
        let session = try Session(options: options)
        _ = try? session.library.reload()
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

    private func runOnDaemon(_ client: RPCClient, args: [MacroValue]) throws {
        var params: OrderedFields = ["name": .string(name), "args": .array(args)]
        if let timeoutMs = options.timeoutMs { params["timeoutMs"] = .number(Double(timeoutMs)) }
        do {
            let result = try client.call("macro.call", .object(params))
            let progress = try client.call("progress.get")
            let values = (progress.objectValue ?? [:]).map { ($0.key, $0.value.doubleValue ?? 0) }
            printResult(result, values: values)
        } catch let error as RPCError {
            throw DaemonLink.report(error, json: options.json)
        }
    }

    private func printResult(_ result: MacroValue, session: Session) {
        printResult(result, values: session.model.values.map { ($0.channel, $0.value) })
    }

    private func printResult(_ result: MacroValue, values: [(String, Double)]) {
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
        let width = values.map(\.0.count).max() ?? 0
        for (channel, value) in values {
            print("\(channel.padding(toLength: width, withPad: " ", startingAt: 0))  \(Console.format(value))")
        }
    }
}
