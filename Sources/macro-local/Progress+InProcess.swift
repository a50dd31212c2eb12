import MacroCLI
import MacroEngineCore

/// `macro set` in this process: the state file's values, one set, saved.
extension SetValue: InProcessCommand {
    func runInProcess() throws {
        let session = try Session(options: options, needsDirectory: false)
        do {
            try session.model.set(channel, to: value)
            try session.environment.saveState()
        } catch let error as MacroError {
            throw error.code == .io
                ? Failure(exit: 74, kind: "io", message: Session.describeStateError(error, path: session.store.path))
                : Failure(exit: 64, kind: "usage", message: error.message)
        }
        Progress.show(session.model.values.map { ($0.channel, $0.value) }, json: options.json)
    }
}

/// `macro progress` in this process: the state file's values.
extension Progress: InProcessCommand {
    func runInProcess() throws {
        let session = try Session(options: options, needsDirectory: false)
        Self.show(session.model.values.map { ($0.channel, $0.value) }, json: options.json)
    }
}
