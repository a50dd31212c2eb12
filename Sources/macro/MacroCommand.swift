import ArgumentParser
import MacroEngineCore

/// `macro`: run and inspect JavaScript macros.
@main
struct MacroCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "macro",
        abstract: "Run and inspect MacroEngine's JavaScript macros.",
        discussion: """
            A macro is a file macros/NAME.js holding one function expression:

                function(channel, amount) {
                    progress[channel] += amount;
                    return progress[channel];
                }

            Macros see the progress model (getInnerProgress/setInnerProgress ... and the \
            `progress` object), call one another by name, and run under a time limit.

            run, set and progress use the daemon (macrod) when one answers on the socket, and \
            run in-process otherwise; --local forces in-process.

            Examples:
              macro run random                 run macros/random.js, print result and progress
              macro run bump inner 2.5         arguments are JSON when valid, else strings
              macro list                       every macro, ok or with its error
              macro check                      file:line:col: error: ... for broken files
              macro progress --watch           the rings, redrawn live from the daemon
              macro edit bump                  edit a macro; reports whether it loaded

            \(Exit.helpTable)
            """,
        version: MacroEngineVersion.string,
        subcommands: [Run.self, List.self, Show.self, Check.self, Status.self, SetValue.self, Progress.self, Logs.self, Edit.self, Types.self, Repl.self, Running.self, Cancel.self, Dashboard.self]
    )
}
