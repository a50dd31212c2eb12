import ArgumentParser
import Foundation
import MacroBase

/// Options of every command: which daemon (or config), and machine-readable output.
struct DaemonOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "Talk to the macrod on this socket (exit 69 if none answers). Default: the config's socket, else $MACROENGINE_SOCKET, else the standard path.", valueName: "path"))
    var socket: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "The config file (YAML). Default: $MACROENGINE_CONFIG, else $XDG_CONFIG_HOME/macroengine/macroengine.yaml when it exists, else built-in defaults. Its socket names the daemon.",
            valueName: "file"))
    var config: String?

    @Flag(name: .long, help: "Print machine-readable JSON on stdout (a failure: one object {\"error\": {\"code\": EXIT, \"kind\": ...}}).")
    var json = false
}

/// Options of the commands that can work in-process on a macros directory.
struct LocalOptions: ParsableArguments {
    @Flag(name: .long, help: "Work in this process on the files even when a daemon is running.")
    var local = false

    @Option(name: .long, help: ArgumentHelp("The macros directory, in-process (overrides the config's macros_dir; default ./macros).", valueName: "dir"))
    var macros: String?

    @Flag(name: .shortAndLong, help: "Log engine activity to stderr (in-process).")
    var verbose = false
}

/// `--state FILE`.
struct StateOption: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("The state file holding the progress values, in-process (overrides state_file).", valueName: "file"))
    var state: String?
}

/// `--timeout-ms N`.
struct TimeoutOption: ParsableArguments {
    @Option(
        name: .customLong("timeout-ms"),
        help: ArgumentHelp(
            "Deadline for the whole call in milliseconds, 1...86400000, awaited time included (default: call_deadline_ms 30000; a synchronous run also stops at time_limit_ms 5000).",
            valueName: "n"))
    var timeoutMs: String?

    /// The value, checked: a whole number of milliseconds in range.
    func validated() throws -> Int? {
        guard let timeoutMs else { return nil }
        return try Self.validated(timeoutMs)
    }

    /// `text` as a whole number of milliseconds in range.
    static func validated(_ text: String) throws -> Int {
        guard let value = Int(text), value >= 1, value <= 86_400_000 else {
            throw ValidationError("--timeout-ms must be a whole number of milliseconds between 1 and 86400000, got '\(text)'")
        }
        return value
    }
}

/// Everything a command was told, with defaults for the options it does not offer.
package struct EngineOptions {
    /// `--config`.
    package var config: String?
    /// `--macros`.
    package var macros: String?
    /// `--state`.
    package var state: String?
    /// `--timeout-ms`, checked.
    package var timeoutMs: Int?
    /// `--socket`.
    package var socket: String?
    /// `--local`.
    package var local = false
    /// `--json`.
    package var json = false
    /// `-v/--verbose`.
    package var verbose = false

    /// Nothing given: every default.
    package init() {}

    init(_ daemon: DaemonOptions, _ local: LocalOptions? = nil, state: StateOption? = nil, timeout: TimeoutOption? = nil) {
        config = daemon.config
        socket = daemon.socket
        json = daemon.json
        macros = local?.macros
        self.local = local?.local ?? false
        verbose = local?.verbose ?? false
        self.state = state?.state
        timeoutMs = (try? timeout?.validated()) ?? nil
    }

    /// The config file in effect: `--config`, else `$MACROENGINE_CONFIG`, else
    /// `$XDG_CONFIG_HOME/macroengine/macroengine.yaml` (`~/.config/...`) when it exists.
    package var configPath: String? { MacroConfig.filePath(explicit: config) }

    /// The config with command-line overrides applied. Exits 78 on an invalid config.
    package func resolvedConfig() throws -> MacroConfig {
        var resolved = MacroConfig()
        if let path = configPath {
            do {
                resolved = try MacroConfig.load(file: path)
            } catch {
                throw Failure(exit: 78, kind: "config", message: "invalid config: \(error)")
            }
        }
        if let macros { resolved.macrosDirectory = macros }
        if let state { resolved.stateFile = state }
        if let timeoutMs {
            // The whole call's deadline, awaited time included, and so also each synchronous run.
            resolved.timeLimit = .milliseconds(timeoutMs)
            resolved.callDeadline = .milliseconds(timeoutMs)
        }
        return resolved
    }
}
