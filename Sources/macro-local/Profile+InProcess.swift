import MacroCLI
import MacroEngineCore

/// `macro profile` in this process (`--local`, or no daemon): the macros directory loaded fresh,
/// the runs under the sampling profiler (``MacroLibrary/profile(_:arguments:runs:deadline:)``,
/// as the daemon's `macro.profile`). The progress values start from the state file; what the runs
/// change is not saved (a profile measures, it does not keep).
extension Profile: InProcessCommand {
    func runInProcess() throws {
        try write(profileInProcess())
    }

    /// Profiles the macro here and answers what `macro.profile` would.
    func profileInProcess() throws -> MacroValue {
        let session = try Session(options: options)
        _ = try? session.library.reload()
        do {
            return try session.library.profile(name, arguments: values, runs: runs).wait().json
        } catch let error as MacroError {
            Console.report(error)
            LibHint.print(for: error.message, libs: session.library.libEntries.map { List.json($0, kind: "lib") })
            throw Failure.engine(error)
        }
    }
}
