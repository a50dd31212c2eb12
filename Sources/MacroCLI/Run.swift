import ArgumentParser
import Foundation
import MacroBase
import MacroRPC

/// `macro run NAME [ARG...]`.
package struct Run: ParsableCommand {
    /// The command's name (`macro run`).
    static let commandWord = "run"

    package static let configuration = CommandConfiguration(
        commandName: commandWord,
        abstract: "Run a macro and print its result and the progress values after it.",
        discussion: """
            Each ARG is parsed as JSON when it is valid JSON (3, -2.5, true, "text", [1,2], \
            {"a":1}), else passed as a string; `--` ends the options (it is not passed on). \
            An unknown option is a usage error (64). With a daemon, the macro's console output \
            is printed on stderr as it happens, as in-process. The result is printed as JSON. Progress values are saved \
            to the state file after a successful run, so runs accumulate; a run that fails \
            (throws or times out) leaves the saved values unchanged.

            \(Exit.table(of: [0, 64, 65, 66, 69, 70, 74, 75, 77, 78]))
            """)

    @Argument(help: "The macro's name (the file name without .js).", completion: .custom(Completions.macroNames))
    package var name: String

    @Argument(
        help: ArgumentHelp(
            "Arguments for the macro: JSON when valid, else strings. Negative numbers are values (bump inner -2); after `--` every word is an argument, even one starting with '-'.",
            valueName: "arg"), completion: .custom(Completions.channelNames))
    var arguments: [String] = []

    @OptionGroup var daemon: DaemonOptions
    @OptionGroup var local: LocalOptions
    @OptionGroup var stateOption: StateOption
    @OptionGroup var timeout: TimeoutOption

    package var options: EngineOptions { EngineOptions(daemon, local, state: stateOption, timeout: timeout) }

    /// The macro's arguments: each word as JSON when it is valid JSON, else as a string.
    package var values: [MacroValue] { Self.values(arguments) }

    package init() {}

    package func validate() throws { _ = try timeout.validated() }

    package func run() throws {
        guard let client = try DaemonLink.connect(options) else { return try InProcess.run(self) }
        try Self.runOnDaemon(client, name: name, args: values, options: options)
    }

    /// `macro run` on the daemon for the usual command line, without swift-argument-parser: its
    /// parse reflects over every option of the command (Mirror, protocol conformance lookups over
    /// the whole statically linked binary), about a third of the process's CPU time on this path
    /// (docs/performance.md). Only a line whose meaning is certain is taken: after
    /// ``ArgumentLayout/arrange(_:subcommands:)``, `run`, then only `--socket=`, `--config=`,
    /// `--timeout-ms=` (valid) and `--json`, each at most once, then `--` and the name and its
    /// arguments. Anything else (help, --version, --local, a usage error, ...) is left to the
    /// parser, which then does exactly what it always did.
    struct Direct {
        var name: String
        var arguments: [String]
        var options = EngineOptions()

        /// The command for `arranged`, or nil when the parser must read it.
        init?(_ arranged: [String]) {
            guard arranged.first == Run.commandWord, let terminator = arranged.firstIndex(of: "--"), terminator + 1 < arranged.count else { return nil }
            for word in arranged[1..<terminator] {
                if word == "--json" {
                    guard !options.json else { return nil }
                    options.json = true
                    continue
                }
                guard let equals = word.firstIndex(of: "=") else { return nil }
                let value = String(word[word.index(after: equals)...])
                guard !value.isEmpty else { return nil }
                switch word[..<equals] {
                case "--socket" where options.socket == nil: options.socket = value
                case "--config" where options.config == nil: options.config = value
                case "--timeout-ms" where options.timeoutMs == nil:
                    guard let valid = try? TimeoutOption.validated(value) else { return nil }
                    options.timeoutMs = valid
                default: return nil
                }
            }
            name = arranged[terminator + 1]
            arguments = Array(arranged[(terminator + 2)...])
        }

        /// Runs the macro on the daemon: false, having done nothing, when none answers (the
        /// parsed command then goes in-process as usual). Throws what ``Run/run()`` throws.
        func runOnDaemon() throws -> Bool {
            guard let client = try DaemonLink.connect(options) else { return false }
            try Run.runOnDaemon(client, name: name, args: Run.values(arguments), options: options)
            return true
        }
    }

    /// Each word as JSON when it is valid JSON, else as a string.
    static func values(_ arguments: [String]) -> [MacroValue] { arguments.map { (try? MacroValue(jsonText: $0)) ?? .string($0) } }

    private static func runOnDaemon(_ client: RPCClient, name: String, args: [MacroValue], options: EngineOptions) throws {
        var params: OrderedFields = ["name": .string(name), "args": .array(args), "announce": true]
        if let timeoutMs = options.timeoutMs { params["timeoutMs"] = .number(Double(timeoutMs)) }
        // Ctrl-C cancels the call in the daemon (as in the REPL), instead of leaving it running
        // after the client has gone: the call's id comes first as macro.started.
        let cancel = RunCancellation(socket: client.path)
        let interrupts = Interrupts { cancel.interrupt() }
        defer { withExtendedLifetime(interrupts) {} }
        do {
            // console.* of the call arrives as macro.console notifications before the reply.
            let result = try client.call(.call, .object(params)) { note, id in
                if note["method"] == .string(RPCNotification.started.rawValue), note["params"]["id"] == id, let call = note["params"]["call"].intValue {
                    cancel.started(call)
                }
                ConsoleForwarding.print(note, id: id, macro: name)
            }
            let progress = try client.call(.progressGet)
            let values = (progress.objectValue ?? [:]).map { ($0.key, $0.value.doubleValue ?? 0) }
            printResult(result, values: values, name: name, json: options.json)
        } catch let error as RPCError where cancel.interrupted && error.code == RPCError.timeout {
            throw Failure(exit: 130, kind: "interrupted", message: "\(name): cancelled (Ctrl-C); its changes were rolled back")
        } catch let error as RPCError {
            let failure = DaemonLink.report(error)
            if error.code == RPCError.macroThrew, let entries = try? client.call(.list).arrayValue {
                LibHint.print(for: error.data?["message"].stringValue ?? error.message, libs: entries.filter { $0["kind"] == "lib" })
            }
            throw failure
        }
    }

    /// Prints the result and the progress values after it (one JSON object with `--json`).
    package func printResult(_ result: MacroValue, values: [(String, Double)]) {
        Self.printResult(result, values: values, name: name, json: options.json)
    }

    static func printResult(_ result: MacroValue, values: [(String, Double)], name: String, json: Bool) {
        if json {
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
            print("\(Console.pad(channel, to: width))  \(Console.format(value))")
        }
    }
}
