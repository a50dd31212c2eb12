import ArgumentParser
import Foundation
import MacroBase

/// `macro`: run and inspect JavaScript macros. The same command tree is parsed by `macro` and by
/// `macro-local`; they differ only in their ``InProcessHalf`` (see ``InProcess``).
package struct MacroCommand: ParsableCommand {
    package static let configuration = CommandConfiguration(
        commandName: "macro",
        abstract: "Run and inspect MacroEngine's JavaScript macros.",
        discussion: """
            A macro is a file macros/NAME.js holding one function, named like the file:

                function bump(channel, amount) {
                    progress[channel] += amount;
                    return progress[channel];
                }

            Macros see the progress model (getInnerProgress/setInnerProgress ... and the \
            `progress` object), call one another by name, and run under a time limit.

            Every command uses the daemon (macrod) when one answers on the socket (--socket, \
            else the config's socket, else $MACROENGINE_SOCKET, else the default path); run, \
            set, progress, list, show, check, types, edit, profile and repl work in-process otherwise, \
            and --local forces that. The in-process work (the JavaScript engine) is done by \
            macro-local, installed beside macro, which macro runs in its place.

            Examples:
              macro run random                 run macros/random.js: result, progress
              macro run bump inner 2.5         arguments are JSON when valid, else strings
              macro list                       every macro, ok or with its error
              macro check                      file:line:col: error: ... for broken files
              macro progress --watch           the rings, redrawn live from the daemon
              macro edit bump                  edit a macro; reports whether it loaded

            \(Exit.helpTable)
            """,
        version: MacroEngineVersion.string,
        subcommands: [
            Run.self, List.self, Show.self, Check.self, Status.self, SetValue.self, Progress.self, Logs.self, Edit.self, Types.self, Repl.self, Running.self, Cancel.self,
            Dashboard.self, Stats.self, Profile.self, Unquarantine.self, Resume.self, Dap.self, Trigger.self, Triggers.self, StoreCommand.self, RunsCommand.self,
            History.self, Diff.self, Rollback.self, Audit.self,
        ]
    )

    package init() {}

    /// Installs `half`, parses (after ``ArgumentLayout``), runs, and turns every failure into
    /// its exit code: the message on stderr and, with `--json`, one JSON object on stdout.
    package static func main(inProcess half: any InProcessHalf) -> Never {
        InProcess.install(half)
        let raw = Array(CommandLine.arguments.dropFirst())
        let json = (raw.firstIndex(of: "--").map { raw[..<$0] } ?? raw[...]).contains("--json")
        // `macro run` on the daemon, the usual line, skips the parse and even the commands'
        // configurations (Run.Direct says why). Arranged as if `run` were the only command: for
        // a `run` line that is the same arrangement, and any other line is no `run` line either way.
        if let direct = Run.Direct(ArgumentLayout.arrange(raw, subcommands: [Run.commandWord])) {
            do {
                if try direct.runOnDaemon() { Foundation.exit(0) }
            } catch {
                fail(error, json: json)
            }
        }
        let names = configuration.subcommands.map { $0._commandName }
        let arranged = ArgumentLayout.arrange(raw, subcommands: names)
        // `macro` alone names no command: a usage error, with the help where errors go.
        if arranged.isEmpty {
            FileHandle.standardError.write(Data((helpMessage() + "\n").utf8))
            Foundation.exit(Exit.usage.rawValue)
        }
        if let first = arranged.first, !first.hasPrefix("-"), first != "help", !names.contains(first) {
            var message = "unknown command '\(first)'"
            if let near = ArgumentLayout.nearest(first, in: names) { message += "; did you mean '\(near)'?" }
            finish(Failure(exit: 64, kind: "usage", message: message + " (see `macro --help`)"), json: json)
        }
        do {
            var command = try parseAsRoot(arranged)
            try command.run()
            Foundation.exit(0)
        } catch {
            fail(error, json: json)
        }
    }

    /// Exits for `error`: a ``Failure`` as it says, anything else (swift-argument-parser's
    /// errors, `ExitCode`) with the parser's exit code and message.
    static func fail(_ error: any Error, json: Bool) -> Never {
        if let failure = error as? Failure { finish(failure, json: json) }
        let code = exitCode(for: error)
        // `macro check` finding errors (1) printed its JSON already.
        guard code != .success, json, code.rawValue != 1 else { exit(withError: error) }
        if error is ExitCode {
            finish(Failure(exit: code.rawValue, kind: Failure.kind(forExit: code.rawValue), message: Console.lastError ?? "exit \(code.rawValue)", printed: true), json: true)
        }
        let message = self.message(for: error)
        FileHandle.standardError.write(Data((fullMessage(for: error) + "\n").utf8))
        finish(Failure(exit: code.rawValue, kind: code.rawValue == 64 ? "usage" : Failure.kind(forExit: code.rawValue), message: message, printed: true), json: true)
    }

    /// Prints `failure` and exits with its code.
    static func finish(_ failure: Failure, json: Bool) -> Never {
        if !failure.printed { Console.error(failure.message.hasPrefix("macro ") ? failure.message : "macro: \(failure.message)") }
        if json { Console.printJSON(failure.json) }
        Foundation.exit(failure.exit)
    }
}
