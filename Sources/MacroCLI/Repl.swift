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
            line while it is incomplete (an open bracket, template or comment, or an expression \
            cut short); any other syntax error is shown at once. Ctrl-C or .break clears the \
            input; while code runs, Ctrl-C cancels it (a macro, an awaited promise, a loop) and \
            the session goes on. Results are printed like console.log, and console output as it \
            happens. A returned promise is awaited, and `await` works at the top level \
            (`var x = await animate(); x + 1`); top-level var, let, const, function and class \
            declarations stay for the next lines. Ctrl-D or .exit quits; .help lists this.

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
        .break    clear the input typed so far (or Ctrl-C)
        .exit     quit (or Ctrl-D)
        Ctrl-C    clear the input; while code runs, cancel it
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
            _ = try client.call(.eval, ["source": "(function () {})", "call": true])
        } catch let error as RPCError where error.code == RPCError.forbidden {
            Console.error(
                """
                macro repl: the daemon at \(client.path) does not allow engine.eval (it runs any JavaScript).
                Enable it for development with `engine_eval: true` in macrod's config, or use `macro repl --local`.
                """)
            throw Failure(exit: 77, kind: "refused", message: "engine.eval is disabled on the daemon", printed: true)
        } catch let error as RPCError { throw DaemonLink.report(error) }
        banner("macrod at \(client.path)")
        let name = ReplEvaluator.functionName(pid: getpid())
        let backend = DaemonRepl(client: client, functionName: name, timeoutMs: options.timeoutMs)
        if let failure = loop(editor, ReplEvaluator(backend: backend, functionName: name)) { throw failure }
    }

    /// Reads (multi-line) input, evaluates it (nil: incomplete, read more), prints. Ctrl-C and
    /// `.break` clear what was typed; while code runs, Ctrl-C cancels it. Returns the failure
    /// that ended the session, if one did.
    package func loop(_ editor: LineEditor, _ evaluator: ReplEvaluator) -> Failure? {
        let interrupts = Interrupts(evaluator.backend.cancel)
        var buffer = ""
        while true {
            let line: String
            switch editor.readLine(prompt: buffer.isEmpty ? "> " : "... ") {
            case .end: return nil
            case .interrupted:
                buffer = ""
                continue
            case .line(let text): line = text
            }
            switch line.trimmingCharacters(in: .whitespaces) {
            case ".exit": return nil
            case ".break":
                buffer = ""
                continue
            case ".help":
                print(Self.help)
                continue
            default: break
            }
            buffer += buffer.isEmpty ? line : "\n" + line
            if buffer.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty { buffer = ""; continue }
            guard let result = interrupts.during({ evaluator.evaluate(buffer) }) else { continue }
            buffer = ""
            switch result {
            case .success(let text): print(text)
            case .failure(let message): print(Terminal.red(message))
            case .stop(let failure): return failure
            }
            fflush(nil)
        }
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
