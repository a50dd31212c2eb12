import Foundation
import MacroCLI
import MacroEngineCore

/// `macro run` in this process: the macros directory loaded fresh, the call, the state saved.
extension Run: InProcessCommand {
    func runInProcess() throws {
        let session = try Session(options: options)
        _ = try? session.library.reload()
        let result: MacroValue
        do {
            result = try session.library.call(name, arguments: values)
        } catch let error as MacroError {
            Console.report(error)
            LibHint.print(for: error.message, libs: session.library.libEntries.map { List.json($0, kind: "lib") })
            throw Failure.engine(error)
        }
        do {
            try session.environment.saveState()
        } catch let error as MacroError {
            printResult(result, session: session)
            throw Failure(exit: 74, kind: "io", message: Session.describeStateError(error, path: session.store.path))
        }
        printResult(result, session: session)
    }

    private func printResult(_ result: MacroValue, session: Session) {
        printResult(result, values: session.model.values.map { ($0.channel, $0.value) })
    }
}
