import Foundation
import MacroCLI
import MacroEngineCore

/// `macro repl` in this process: an engine with the macros directory and the state file.
extension Repl: InProcessCommand {
    func runInProcess() throws {
        let editor = LineEditor(historyFile: historyFile())
        defer { editor.save() }
        let session = try Session(options: options)
        _ = try? session.library.reload()
        session.engine.exceptionHandler = { _ in }
        banner("in-process, macros from \(session.library.directory)")
        let interrupts = Interrupts { [engine = session.engine] in
            // Cancels what is registered as a call: a macro's promise, an awaited value.
            for call in engine.runningCalls { engine.cancel(call: call.id) }
        }
        let channels = session.config.channels.map(\.name)
        let failure = loop(editor) { source in
            do {
                if try session.engine.isIncomplete(source) { return nil }
                let trimmed = source.trimmingCharacters(in: .whitespacesAndNewlines)
                // `progress` alone: its values (the object's properties are accessors).
                let shown = trimmed == "progress" || trimmed == "progress;"
                    ? "({" + channels.map { "\($0): progress.\($0)" }.joined(separator: ", ") + "})" : source
                return .success(try interrupts.during { try Self.evaluate(shown, session.engine) })
            } catch let error as MacroError {
                return .failure(error.code == .cancelled ? "interrupted (the call was cancelled)" : error.description)
            } catch {
                return .failure("\(error)")
            }
        }
        try? session.store.save(session.model.valuesByName)
        if let failure { throw failure }
    }

    /// Evaluates like Node's REPL: a script, and when `await` makes it invalid as a script, the
    /// same text in an async function (as an expression first, so its value is shown).
    static func evaluate(_ source: String, _ engine: MacroEngine) throws -> String {
        do {
            return try engine.evaluateForDisplay(source)
        } catch let error as MacroError where error.code == .syntax && source.contains("await") {
            let forms = [
                "(async function () { var v = await (\n" + source + "\n); return v === undefined ? \(undefinedMarker) : v })()",
                "(async function () {\n" + source + "\n; return \(undefinedMarker) })()",
            ]
            for form in forms {
                do {
                    // An awaited value comes back as JSON: shown like any other value.
                    let json = try engine.evaluateForDisplay(form)
                    guard let value = try? MacroValue(jsonText: json) else { return json }
                    return value == .string(undefinedMarkerText) ? "undefined" : ReplFormat.inspect(value)
                } catch let inner as MacroError where inner.code == .syntax {
                    continue
                }
            }
            throw error
        }
    }

    private static let undefinedMarkerText = "__macroengine_repl_undefined__"
    private static let undefinedMarker = "\"__macroengine_repl_undefined__\""
}
