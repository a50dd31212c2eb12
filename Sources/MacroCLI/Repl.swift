import ArgumentParser
import Dispatch
import Foundation
import MacroBase
import MacroRPC
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// `macro repl`.
package struct Repl: ParsableCommand {
    package static let configuration = CommandConfiguration(
        commandName: "repl",
        abstract: "An interactive JavaScript console with the engine's globals and your macros.",
        discussion: """
            Line editing (arrows, Home/End, Ctrl-A/E/U/K/W/L) and history (Up/Down, saved after \
            every line in $XDG_STATE_HOME/macroengine/repl_history). Input continues on a "..." \
            line while it is incomplete. Results are printed like console.log; a returned \
            promise is awaited, and `await` works at the top level (`await sleep(100)`, \
            `x = await animate()`; a `var` declared in such a line stays local to it). \
            Errors show their position. Ctrl-C clears the line; while code runs it cancels the \
            call (a macro or an awaited promise; a synchronous loop typed at the prompt stops at \
            the time limit) and the session goes on. Ctrl-D or .exit quits; .help lists this.

            In-process with --local (or when no daemon answers); against the daemon only when its \
            config enables engine_eval (a development switch). Exits 69 when the daemon goes away.
            """)

    @OptionGroup var daemon: DaemonOptions
    @OptionGroup var local: LocalOptions
    @OptionGroup var stateOption: StateOption
    @OptionGroup var timeout: TimeoutOption

    package var options: EngineOptions { EngineOptions(daemon, local, state: stateOption, timeout: timeout) }

    package init() {}

    package func validate() throws { _ = try timeout.validated() }

    static let help = """
        .help     this text
        .exit     quit (or Ctrl-D)
        Ctrl-C    clear the line; while code runs, cancel it
        progress  the progress values; macros are globals by name (bump('inner', 1))
        await     works at the top level: await sleep(100)
        """

    package func run() throws {
        guard let client = try DaemonLink.connect(options) else { return try InProcess.run(self) }
        let editor = LineEditor(historyFile: historyFile())
        defer { editor.save() }
        try runOnDaemon(client, editor)
    }

    /// The first line on a terminal: the version and where the code runs.
    package func banner(_ where: String) {
        guard isatty(STDIN_FILENO) == 1 else { return }
        print("MacroEngine \(MacroEngineVersion.string) REPL (\(`where`)). .help for help, Ctrl-D to quit.")
    }

    private func runOnDaemon(_ client: RPCClient, _ editor: LineEditor) throws {
        do {
            _ = try client.call("engine.eval", ["source": "undefined"])
        } catch let error as RPCError where error.code == RPCError.forbidden {
            Console.error("""
                macro repl: the daemon at \(client.path) does not allow engine.eval (it runs any JavaScript).
                Enable it for development with `engine_eval: true` in macrod's config, or use `macro repl --local`.
                """)
            throw Failure(exit: 77, kind: "refused", message: "engine.eval is disabled on the daemon", printed: true)
        } catch let error as RPCError { throw DaemonLink.report(error) }
        banner("macrod at \(client.path)")
        let interrupted = InterruptFlag()
        let interrupts = Interrupts { interrupted.set() }
        let failure = loop(editor) { source in
            do {
                return .success(try interrupts.during { try DaemonEval(client: client, interrupted: interrupted).evaluate(source) })
            } catch let error as RPCError {
                if DaemonLink.isDisconnect(error) {
                    return .stop(Failure(exit: 69, kind: "unavailable", message: "macro repl: macrod at \(client.path) went away (\(error.message))"))
                }
                if error.code == RPCError.syntaxError || error.message.contains("Unexpected EOF") { return nil }
                return .failure(Self.describe(error))
            } catch {
                return .failure("\(error)")
            }
        }
        if let failure { throw failure }
    }

    /// A daemon's error: `file:line:col: error: Name: message` when it names a place in a file
    /// (a macro that threw), the message alone for the REPL's own input.
    static func describe(_ error: RPCError) -> String {
        guard let data = error.data else { return "error: \(error.message)" }
        let name = data["errorName"].stringValue.map { "\($0): " } ?? ""
        let message = data["message"].stringValue ?? error.message
        if let file = data["file"].stringValue, file != "<eval>", let line = data["line"].intValue {
            return "\(file):\(line):\(data["column"].intValue ?? 0): error: \(name)\(message)"
        }
        if let line = data["line"].intValue {
            // The input starts on the wrapper's second line.
            return "<repl>:\(max(1, line - 1)):\(data["column"].intValue ?? 0): error: \(name)\(message)"
        }
        return "error: \(name)\(message)"
    }

    /// Reads (multi-line) input, evaluates it with `evaluate` (nil: incomplete), prints. Returns
    /// the failure that ended the session, if one did.
    package func loop(_ editor: LineEditor, _ evaluate: (String) -> ReplOutcome?) -> Failure? {
        var buffer = ""
        while let line = editor.readLine(prompt: buffer.isEmpty ? "> " : "... ") {
            let command = line.trimmingCharacters(in: .whitespaces)
            if buffer.isEmpty, command == ".exit" { break }
            if buffer.isEmpty, command == ".help" {
                print(Self.help)
                continue
            }
            buffer += buffer.isEmpty ? line : "\n" + line
            if buffer.trimmingCharacters(in: .whitespaces).isEmpty { buffer = ""; continue }
            guard let result = evaluate(buffer) else { continue }
            buffer = ""
            switch result {
            case .success(let text): if !text.isEmpty { print(text) }
            case .failure(let message): print(Terminal.red(message))
            case .stop(let failure): return failure
            }
            fflush(nil)
        }
        return nil
    }

    /// `$XDG_STATE_HOME/macroengine/repl_history` (`~/.local/state/...`).
    package func historyFile() -> String? {
        let env = ProcessInfo.processInfo.environment
        let base = env["XDG_STATE_HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? ((env["HOME"] ?? NSHomeDirectory()) + "/.local/state")
        return base + "/macroengine/repl_history"
    }
}

/// What one REPL input gave.
package enum ReplOutcome {
    /// Text to print.
    case success(String)
    /// An error to print; the session goes on.
    case failure(String)
    /// The session ends with this failure.
    case stop(Failure)
}
