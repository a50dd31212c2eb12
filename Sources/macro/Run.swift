import ArgumentParser
import Foundation
import MacroEngineCore
import MacroRPC

/// `macro run NAME [ARG...]`.
struct Run: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run a macro and print its result and the progress values after it.",
        discussion: """
            Each ARG is parsed as JSON when it is valid JSON (3, -2.5, true, "text", [1,2], \
            {"a":1}), else passed as a string; `--` ends the options (it is not passed on). \
            An unknown option is a usage error (64). With a daemon, the macro's console output \
            is printed on stderr as it happens, as in-process. The result is printed as JSON. Progress values are saved \
            to the state file after a successful run, so runs accumulate; a run that fails \
            (throws or times out) leaves the saved values unchanged.

            \(Exit.helpTable)
            """)

    @Argument(help: "The macro's name (the file name without .js).", completion: .custom(Completions.macroNames))
    var name: String

    @Argument(help: ArgumentHelp("Arguments for the macro: JSON when valid, else strings. Negative numbers are values (bump inner -2); after `--` every word is an argument, even one starting with '-'.", valueName: "arg"), completion: .custom(Completions.channelNames))
    var arguments: [String] = []

    @OptionGroup var daemon: DaemonOptions
    @OptionGroup var local: LocalOptions
    @OptionGroup var stateOption: StateOption
    @OptionGroup var timeout: TimeoutOption

    var options: EngineOptions { EngineOptions(daemon, local, state: stateOption, timeout: timeout) }

    func validate() throws { _ = try timeout.validated() }

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
            LibHint.print(for: error.message, libs: session.library.libEntries.map { List.json($0, kind: "lib") })
            throw Failure.engine(error)
        }
        do {
            try session.store.save(session.model.valuesByName)
        } catch let error as MacroError {
            printResult(result, session: session)
            throw Failure(exit: 74, kind: "io", message: Session.describeStateError(error, path: session.store.path))
        }
        printResult(result, session: session)
    }

    private func runOnDaemon(_ client: RPCClient, args: [MacroValue]) throws {
        var params: OrderedFields = ["name": .string(name), "args": .array(args)]
        if let timeoutMs = options.timeoutMs { params["timeoutMs"] = .number(Double(timeoutMs)) }
        do {
            // console.* of the call arrives as macro.console notifications before the reply.
            let result = try client.call("macro.call", .object(params)) { note, id in
                ConsoleForwarding.print(note, id: id, macro: name)
            }
            let progress = try client.call("progress.get")
            let values = (progress.objectValue ?? [:]).map { ($0.key, $0.value.doubleValue ?? 0) }
            printResult(result, values: values)
        } catch let error as RPCError {
            let failure = DaemonLink.report(error)
            if error.code == RPCError.macroThrew, let entries = try? client.call("macro.list").arrayValue {
                LibHint.print(for: error.data?["message"].stringValue ?? error.message, libs: entries.filter { $0["kind"] == "lib" })
            }
            throw failure
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
