import ArgumentParser
import Foundation
import MacroBase
import MacroRPC

/// `macro edit NAME`.
package struct Edit: ParsableCommand {
    package static let configuration = CommandConfiguration(
        commandName: "edit",
        abstract: "Open a macro in $VISUAL/$EDITOR (a new one starts from a template), then report whether the new version loaded.",
        discussion: """
            The editor runs in this terminal (vim, nano, vi, or a command with options such as \
            EDITOR="code --wait"). A new macro starts from the template

                // NAME: describe what it does.
                function NAME() {
                }

            edited in a temporary file: it appears in the macros directory only when you save \
            something else, so quitting without saving creates nothing. Then, with a daemon, \
            has it judge the text you saved (macro.check) and, when it loads, waits until the \
            daemon has loaded it; without one, loads it in-process.

            Exit codes: 0 loaded (or no changes), 65 the saved file does not load (with or \
            without a daemon; the daemon keeps the previous version), 64 the name is not \
            usable (not an identifier, or an engine global such as Math), 71 the editor could \
            not be started or exited with an error, 75 the daemon did not report the file in \
            time.
            """)
    @Argument(help: ArgumentHelp("The macro's name.", valueName: "name"), completion: .custom(Completions.macroNames)) package var name: String
    @Option(help: ArgumentHelp("How long to wait for the daemon to load the saved file, in ms.", valueName: "ms")) package var waitMs = 3000
    @OptionGroup var daemon: DaemonOptions
    @OptionGroup var local: LocalOptions

    package var options: EngineOptions { EngineOptions(daemon, local) }

    package init() {}

    /// The file a new macro starts from: the recommended form, which editors' checkers accept.
    package static func template(for name: String) -> String {
        "// \(name): describe what it does.\nfunction \(name)() {\n    \n}\n"
    }

    /// Always in `macro-local`, with a daemon too: before the editor opens, the name is checked
    /// against the engine's globals (`Math`, `progress`, ...), which only an engine knows.
    package func run() throws {
        try InProcess.run(self)
    }
}
