import ArgumentParser
import MacroCLI

/// A command's part that runs the engine in this process.
protocol InProcessCommand {
    /// Runs it: loads the engine, the macros and the state as the command needs.
    func runInProcess() throws
}

/// `macro-local`'s ``InProcessHalf``: runs the command's in-process part here.
struct InThisProcess: InProcessHalf {
    func run(_ command: any ParsableCommand) throws {
        guard let command = command as? any InProcessCommand else {
            throw Failure(exit: 70, kind: "internal", message: "internal error: \(type(of: command)) has no in-process part")
        }
        try command.runInProcess()
    }
}
