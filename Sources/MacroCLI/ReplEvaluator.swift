import Foundation
import MacroBase
import MacroRPC

/// Where the REPL's code runs: an engine in this process (`macro-local`), or macrod
/// (``DaemonRepl``). Both get the same scripts from ``ReplProgram`` and run them the same way.
package protocol ReplBackend {
    /// Evaluates `script`, whose value is an async function, and calls that function as a macro
    /// call: its promise awaited within the call deadline, its console output printed with
    /// ``ReplConsole`` as it happens, cancellable. Returns what the call settled to. Throws a
    /// ``MacroError`` (`.syntax` when the script does not parse, and then nothing ran), or a
    /// ``Failure`` that ends the session.
    func run(_ script: String) throws -> MacroValue
    /// Cancels the call in progress (Ctrl-C); called on another thread.
    var cancel: @Sendable () -> Void { get }
}

/// One REPL input evaluated the same way in-process and against macrod: ``ReplProgram``'s
/// scripts are tried in order until one parses; when none does, the input's own syntax error
/// decides between "incomplete, read more" (the error is past the input's last line, in the
/// text that closes the wrapper, and no closing bracket was unmatched) and an error to show.
package struct ReplEvaluator {
    /// Where the code runs.
    package let backend: any ReplBackend
    /// The name of the function each input runs in (what `macro running` lists).
    package let functionName: String

    /// An evaluator running on `backend`; `functionName` must be unique to this session
    /// (``ReplEvaluator/functionName(pid:)``), so Ctrl-C cancels only this session's call.
    package init(backend: any ReplBackend, functionName: String) {
        self.backend = backend
        self.functionName = functionName
    }

    /// `__repl_PID`: engine stacks leave `__repl` frames out.
    package static func functionName(pid: Int32) -> String { "__repl_\(pid)" }

    /// What `input` gave; nil when it is incomplete (more lines are needed).
    package func evaluate(_ input: String) -> ReplOutcome? {
        let program = ReplProgram(input)
        var syntax: MacroError?
        for form in program.forms(functionName: functionName) {
            do {
                let value = try backend.run(form.script)
                return .success(value.stringValue ?? ReplFormat.inspect(value))
            } catch let error as MacroError where error.code == .syntax {
                syntax = error
            } catch let error as MacroError {
                return .failure(Self.describe(inInput(error, form)))
            } catch let failure as Failure {
                return .stop(failure)
            } catch {
                return .failure("error: \(error)")
            }
        }
        guard var error = syntax else { return .success("undefined") }
        error.file = "<repl>"
        if let line = error.line, line - 1 > program.lineCount {
            // Past the input: what it left open took in the wrapper's closing text, unless a
            // closing bracket had nothing to close (then the wrapper's text is not the problem).
            guard let closer = program.scan.unmatchedCloser else { return nil }
            error.message = "Unexpected token '\(closer.bracket)'"
            error.line = closer.line
            error.column = nil
        } else {
            error.line = error.line.map { max(1, $0 - 1) }
        }
        return .failure(Self.describe(error))
    }

    /// An error thrown by the input's own code has its place in the script that ran: the line
    /// one more than the input's, the column moved by what was inserted before it on that line.
    func inInput(_ error: MacroError, _ form: ReplProgram.Form) -> MacroError {
        guard error.file == "<repl>" || error.file == "<eval>" else { return error }
        var error = error
        error.file = "<repl>"
        if let line = error.line {
            error.line = max(1, line - 1)
            error.column = error.column.map { form.originalColumn($0, line: line - 1) }
        }
        return error
    }

    /// `file:line:col: error: Name: message`, as much of the place as is known;
    /// "interrupted" for a call cancelled by Ctrl-C.
    package static func describe(_ error: MacroError) -> String {
        if error.code == .cancelled { return "interrupted (the call was cancelled)" }
        return error.location.map { "\($0): error: \(error.headline)" } ?? "error: \(error.headline)"
    }
}

/// The console output of the REPL's code, printed among its results as Node's REPL does:
/// `message` for `console.log` and `console.info`, `warning: message`, `error: message`,
/// `debug: message` for the others.
package enum ReplConsole {
    /// The line for one console call.
    package static func line(level: String, message: String) -> String {
        level == "log" || level == "info" ? message : "\(level == "warn" ? "warning" : level): \(message)"
    }

    /// Prints it on stdout and flushes.
    package static func print(level: String, message: String) {
        Swift.print(line(level: level, message: message))
        fflush(nil)
    }
}

extension MacroError {
    /// A daemon's error as the engine's: the code from the JSON-RPC code (and `data.reason`),
    /// the name, message and place from `data`.
    package init(rpc error: RPCError) {
        let data = error.data ?? .undefined
        let code: MacroError.Code
        switch error.code {
        case RPCError.syntaxError: code = .syntax
        case RPCError.timeout: code = data["reason"] == "cancelled" ? .cancelled : .timeout
        case RPCError.macroThrew: code = .threw
        case RPCError.noSuchMacro: code = .noSuchMacro
        default: code = .invalidArgument
        }
        self.init(
            code: code, message: data["message"].stringValue ?? error.message, errorName: data["errorName"].stringValue,
            file: data["file"].stringValue, line: data["line"].intValue, column: data["column"].intValue, stack: data["stack"].stringValue)
    }
}
