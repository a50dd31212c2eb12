import ArgumentParser
import Foundation
import MacroCLI

#if canImport(Glibc)
import Glibc
#endif

/// `macro`'s ``InProcessHalf``: replaces this process with `macro-local`, the executable beside
/// it that links the engine, passing the same arguments and environment.
///
/// Why a second executable and not a lazy boundary inside one: JavaScriptCore comes in through
/// the dynamic loader as a `NEEDED` library of whatever links the engine, so every start of a
/// binary that contains the engine maps and relocates it (with glib and ICU) before `main`.
/// Loading it lazily in one binary would mean building the engine as a shared library and
/// `dlopen`ing it, which needs the Swift runtime as a shared library in `macro` too; `macro`'s
/// release binary links it statically, for its start (a second copy in the library would not
/// work). `exec` keeps the pid, the
/// terminal, the open descriptors, the signal mask and ignored signals, so exit codes, stdout,
/// stderr, Ctrl-C, a `kill` of the pid and a terminal editor behave exactly as if `macro` had
/// run the engine itself; the cost is one more `execve` on the in-process commands only.
struct ExecMacroLocal: InProcessHalf {
    /// The in-process half's file name, in the directory of `macro`.
    static let fileName = "macro-local"

    func run(_ command: any ParsableCommand) throws {
        let path = try Self.path()
        let code = Self.exec(path)
        let reason =
            code == ENOENT
            ? "\(path) is missing"
            : "cannot run \(path): \(String(cString: strerror(code)))"
        throw Failure(
            exit: 70, kind: "internal",
            message: "\(reason); `macro` runs macros in-process through \(Self.fileName), installed beside it (`make install-user` installs both)")
    }

    /// Replaces this process with `path`, given the original argv byte for byte (an argument
    /// that is not UTF-8 too) and the environment. Returns only when the exec failed: its errno.
    @discardableResult
    static func exec(_ path: String) -> Int32 {
        fflush(nil)
        execv(path, CommandLine.unsafeArgv)
        return errno
    }

    /// True for a command line that runs in-process whatever the daemon does: `edit`, and `run`,
    /// `list`, `check`, `types`, `set`, `progress` (without `--watch`), `repl` and `profile` with `--local`
    /// among their options (before a `--`). `macro` then becomes `macro-local` before parsing
    /// (the parse costs a few ms, the exec makes it twice). Never wrong, only faster:
    /// `macro-local` parses the same line and answers exactly as `macro` would, usage errors
    /// included.
    static func certainlyInProcess(_ arguments: [String]) -> Bool {
        guard let command = arguments.first else { return false }
        if command == "edit" { return true }
        guard ["run", "list", "check", "types", "set", "progress", "repl", "profile"].contains(command) else { return false }
        let options = arguments.dropFirst().prefix { $0 != "--" }
        return options.contains("--local") && !options.contains("--watch")
    }

    /// `macro-local` in the directory of this executable, found through `/proc/self/exe` (so a
    /// symlink to `macro` on the PATH finds the real one's sibling).
    static func path() throws -> String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard length > 0 else {
            throw Failure(exit: 70, kind: "internal", message: "cannot find this executable (/proc/self/exe): \(String(cString: strerror(errno)))")
        }
        let executable = String(decoding: buffer[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return (executable as NSString).deletingLastPathComponent + "/" + fileName
    }
}
