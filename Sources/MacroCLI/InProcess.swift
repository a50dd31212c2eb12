import ArgumentParser
import Synchronization

/// Where the commands that run the engine in this process (`run`, `list`, `check`, `types`,
/// `set`, `progress` without a daemon or with `--local`, `check FILE...`, `edit`, `repl
/// --local`) do it.
///
/// `macro` links no JavaScriptCore: a command that talks to the daemon starts and ends without
/// loading the engine. At the point where a command would run the engine, it calls
/// ``InProcess/run(_:)``; in `macro` the half installed there replaces the process with
/// `macro-local` (exec, same arguments, same pid, terminal and signals), which parses the same
/// command line into the same command, reaches the same point, and runs the engine there.
package protocol InProcessHalf: Sendable {
    /// Runs `command`'s in-process part. In `macro` it does not return: the process becomes
    /// `macro-local`, or it throws a ``Failure`` saying why it could not.
    func run(_ command: any ParsableCommand) throws
}

/// The process's ``InProcessHalf``, installed by its `main`.
package enum InProcess {
    private static let installed = Mutex<(any InProcessHalf)?>(nil)

    /// Installs the half this executable provides.
    package static func install(_ half: any InProcessHalf) {
        installed.withLock { $0 = half }
    }

    /// Runs `command`'s in-process part with the installed half.
    package static func run(_ command: any ParsableCommand) throws {
        guard let half = installed.withLock({ $0 }) else {
            throw Failure(exit: 70, kind: "internal", message: "internal error: no in-process half installed for \(type(of: command))")
        }
        try half.run(command)
    }
}
