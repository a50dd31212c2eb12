import Foundation
import MacroCLI
import MacroEngineCore

/// `macro repl` in this process: an engine with the macros directory and the state file, and the
/// same evaluation as against macrod (``ReplEvaluator``).
extension Repl: InProcessCommand {
    func runInProcess() throws {
        let editor = LineEditor(historyFile: historyFile())
        defer { editor.save() }
        let session = try Session(options: options)
        _ = try? session.library.reload()
        session.engine.exceptionHandler = { _ in }
        // Console output among the results, as against macrod.
        session.engine.consoleHandler = { message in ReplConsole.print(level: message.method, message: message.message) }
        banner("in-process, macros from \(session.library.directory)")
        let name = ReplEvaluator.functionName(pid: getpid())
        let backend = LocalRepl(engine: session.engine, deadline: options.timeoutMs.map { .milliseconds($0) })
        let failure = loop(editor, ReplEvaluator(backend: backend, functionName: name))
        try? session.environment.saveState()
        if let failure { throw failure }
    }
}

/// The REPL's code run by an engine in this process, as a call (awaited, cancellable).
struct LocalRepl: ReplBackend {
    let engine: MacroEngine
    /// The call deadline (`--timeout-ms`), else the config's.
    let deadline: Duration?

    var cancel: @Sendable () -> Void {
        { [engine] in
            for call in engine.runningCalls { engine.cancel(call: call.id) }
        }
    }

    func run(_ script: String) throws -> MacroValue {
        guard case .function(let callable) = try engine.evaluate(script, file: "<repl>"), let function = callable as? MacroFunction else {
            throw MacroError(code: .notAFunction, message: "the REPL's script did not evaluate to a function")
        }
        return try function.callFuture([], deadline: deadline).wait()
    }
}
