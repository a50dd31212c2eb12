import ArgumentParser
import Foundation
import MacroEngineCore
import MacroRPC

/// `macro repl`.
struct Repl: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "An interactive JavaScript console with the engine's globals and your macros.",
        discussion: """
            Line editing (arrows, Home/End, Ctrl-A/E/U/K/W/L) and history (Up/Down, kept in \
            $XDG_STATE_HOME/macroengine/repl_history). Input continues on a "..." line while it \
            is incomplete (an open brace, string or comment). Results are printed like \
            console.log; a returned promise is awaited. Errors show their position. Ctrl-C \
            clears the line, Ctrl-D (or .exit) quits.

            In-process with --local (or when no daemon answers); against the daemon only when its \
            config enables engine_eval (a development switch).
            """)

    @OptionGroup var daemon: DaemonOptions
    @OptionGroup var local: LocalOptions
    @OptionGroup var stateOption: StateOption
    @OptionGroup var timeout: TimeoutOption

    var options: EngineOptions { EngineOptions(daemon, local, state: stateOption, timeout: timeout) }

    func validate() throws { _ = try timeout.validated() }

    func run() throws {
        let editor = LineEditor(historyFile: historyFile())
        defer { editor.save() }
        if let client = try DaemonLink.connect(options) {
            try runOnDaemon(client, editor)
            return
        }
        let session = try Session(options: options)
        _ = try? session.library.reload()
        session.engine.exceptionHandler = { _ in }
        loop(editor) { source in
            do {
                if try session.engine.isIncomplete(source) { return nil }
                return .success(try session.engine.evaluateForDisplay(source))
            } catch let error as MacroError {
                return .failure(error.description)
            } catch {
                return .failure("\(error)")
            }
        }
        try? session.store.save(session.model.valuesByName)
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
        }
        loop(editor) { source in
            do {
                return .success(try client.call("engine.eval", ["source": .string(source)]).jsonText(pretty: true))
            } catch let error as RPCError {
                if error.code == RPCError.syntaxError || error.message.contains("Unexpected EOF") { return nil }
                let data = error.data
                let position = data.flatMap { d in d["line"].intValue.map { "<eval>:\($0):\(d["column"].intValue ?? 0): " } } ?? ""
                return .failure("\(position)error: \(error.message)")
            } catch {
                return .failure("\(error)")
            }
        }
    }

    /// Reads (multi-line) input, evaluates it with `evaluate` (nil: incomplete), prints.
    private func loop(_ editor: LineEditor, _ evaluate: (String) -> Result<String, ReplError>?) {
        var buffer = ""
        while let line = editor.readLine(prompt: buffer.isEmpty ? "> " : "... ") {
            if buffer.isEmpty, line.trimmingCharacters(in: .whitespaces) == ".exit" { break }
            buffer += buffer.isEmpty ? line : "\n" + line
            if buffer.trimmingCharacters(in: .whitespaces).isEmpty { buffer = ""; continue }
            guard let result = evaluate(buffer) else { continue }
            buffer = ""
            switch result {
            case .success(let text): if !text.isEmpty { print(text) }
            case .failure(let error): print(Terminal.red(error.message))
            }
            fflush(nil)
        }
    }

    private func historyFile() -> String? {
        let env = ProcessInfo.processInfo.environment
        let base = env["XDG_STATE_HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? ((env["HOME"] ?? NSHomeDirectory()) + "/.local/state")
        return base + "/macroengine/repl_history"
    }
}

/// An error message to print in the REPL.
struct ReplError: Error {
    let message: String
}

extension Result where Failure == ReplError {
    static func failure(_ message: String) -> Result { .failure(ReplError(message: message)) }
}
