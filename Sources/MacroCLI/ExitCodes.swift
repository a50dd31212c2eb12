import ArgumentParser
import MacroBase

/// The exit codes of `macro` (BSD sysexits), a contract for scripts.
package enum Exit {
    /// 0: success.
    static let ok = ExitCode(0)
    /// 1: `macro check` found errors.
    static let checkFailed = ExitCode(1)
    /// 64 (EX_USAGE): bad command line.
    static let usage = ExitCode(64)
    /// 65 (EX_DATAERR): the macro threw, or its file does not load.
    static let macroThrew = ExitCode(65)
    /// 66 (EX_NOINPUT): no such macro, or no macros directory.
    static let noSuchMacro = ExitCode(66)
    /// 70 (EX_SOFTWARE): internal error.
    static let internalError = ExitCode(70)
    /// 71 (EX_OSERR): `macro edit`'s editor could not be started or exited with an error.
    package static let editorFailed = ExitCode(71)
    /// 71 (EX_OSERR): `macro dashboard` opened no browser (its one-time URL is printed to open by hand).
    static let browserFailed = ExitCode(71)
    /// 74 (EX_IOERR): the state file could not be read or written, or `macro profile`'s output.
    static let ioError = ExitCode(74)
    /// 75 (EX_TEMPFAIL): the macro ran past its time limit.
    static let timeout = ExitCode(75)
    /// 78 (EX_CONFIG): the config file is invalid.
    static let config = ExitCode(78)

    /// The exit code for an engine error.
    static func code(for error: MacroError) -> ExitCode {
        switch error.code {
        case .timeout, .cancelled, .quarantined: return timeout
        case .paused: return ExitCode(69)
        case .noSuchMacro, .invalidName: return noSuchMacro
        case .io where error.line == nil && error.macro == nil: return ioError
        default: return macroThrew
        }
    }

    /// Every exit code with its line in `--help`, in order.
    static let meanings: [(code: Int32, meaning: String)] = [
        (0, "success"),
        (1, "`macro check` found errors"),
        (64, "usage error (bad option or argument)"),
        (65, "the macro threw, or its file does not load"),
        (66, "no such macro or call, or no macros directory"),
        (69, "no daemon answers, it went away, or its JavaScript is paused"),
        (70, "internal error"),
        (71, "the editor (`macro edit`) or the browser (`macro dashboard`) failed"),
        (74, "the state file could not be read or written (or profile's output)"),
        (75, "the macro ran past its time limit or is quarantined; or retry"),
        (77, "the daemon refused the connection"),
        (78, "the config file is invalid"),
    ]

    /// The whole table, printed in `macro --help`.
    static let helpTable = table(of: meanings.map(\.code))

    /// The table of `codes` only, for a subcommand's `--help`: the codes that command can exit with.
    static func table(of codes: [Int32]) -> String {
        let lines = meanings.filter { codes.contains($0.code) }.map { "  \(String($0.code).padding(toLength: 4, withPad: " ", startingAt: 0))\($0.meaning)" }
        precondition(lines.count == codes.count, "an exit code without a meaning in Exit.meanings: \(codes)")
        return (["Exit codes:"] + lines).joined(separator: "\n")
    }
}
