import ArgumentParser
import Foundation
import Logging
import MacroEngineCore

/// Options of every command: which daemon (or config), and machine-readable output.
struct DaemonOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("Talk to the macrod on this socket (exit 69 if none answers). Default: the config's socket, else $MACROENGINE_SOCKET, else the standard path.", valueName: "path"))
    var socket: String?

    @Option(name: .long, help: ArgumentHelp("The config file (YAML). Default: $MACROENGINE_CONFIG, else $XDG_CONFIG_HOME/macroengine/macroengine.yaml when it exists, else built-in defaults. Its socket names the daemon.", valueName: "file"))
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
    @Option(name: .customLong("timeout-ms"), help: ArgumentHelp("Deadline for the whole call in milliseconds, 1...86400000, awaited time included (default: call_deadline_ms 30000; a synchronous run also stops at time_limit_ms 5000).", valueName: "n"))
    var timeoutMs: String?

    /// The value, checked: a whole number of milliseconds in range.
    func validated() throws -> Int? {
        guard let timeoutMs else { return nil }
        guard let value = Int(timeoutMs), value >= 1, value <= 86_400_000 else {
            throw ValidationError("--timeout-ms must be a whole number of milliseconds between 1 and 86400000, got '\(timeoutMs)'")
        }
        return value
    }
}

/// Everything a command was told, with defaults for the options it does not offer.
struct EngineOptions {
    var config: String?
    var macros: String?
    var state: String?
    var timeoutMs: Int?
    var socket: String?
    var local = false
    var json = false
    var verbose = false

    /// Nothing given: every default.
    init() {}

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
    var configPath: String? { MacroConfig.filePath(explicit: config) }

    /// The config with command-line overrides applied. Exits 78 on an invalid config.
    func resolvedConfig() throws -> MacroConfig {
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

/// An engine with the progress model, saved state and the macro library loaded.
struct Session {
    let config: MacroConfig
    let engine: MacroEngine
    let model: ProgressModel
    let library: MacroLibrary
    let store: StateStore
    let logger: Logger
    /// Stops the command when JavaScript keeps the engine busy beyond what its watchdog can stop.
    let stallWatch: StallWatch

    /// Builds the session. Exits 66 when the macros directory is missing and `needsDirectory`.
    init(options: EngineOptions, loadState: Bool = true, needsDirectory: Bool = true) throws {
        let config = try options.resolvedConfig()
        var logger = Logger(label: "macro") { StreamLogHandler.standardError(label: $0) }
        logger.logLevel = options.verbose ? .debug : .critical
        self.config = config
        self.logger = logger
        engine = MacroEngine(
            configuration: .init(
                timeLimit: config.timeLimit, callDeadline: config.callDeadline, evalEnabled: config.allowEval,
                memoryLimit: config.memoryLimitMB << 20, hardenBuiltins: config.hardenBuiltins),
            logger: logger)
        engine.exceptionHandler = { [logger] error in MacroEngine.report(error, to: logger) }
        // console.* of the macro goes to stderr, so a person running it sees it.
        engine.consoleHandler = { message in
            let level = message.level == .info ? "" : "\(message.level): "
            Console.error("[\(message.macro ?? "macro")] \(level)\(message.message)")
        }
        model = ProgressModel(channels: config.channels)
        try engine.add(model)
        store = StateStore(path: config.resolvedStateFile)
        if loadState { try Self.restore(model, from: store) }
        var isDirectory: ObjCBool = false
        let exists = FileManager.default.fileExists(atPath: config.macrosDirectory, isDirectory: &isDirectory)
        guard !needsDirectory || (exists && isDirectory.boolValue) else {
            throw Failure(exit: 66, kind: "noSuchMacro", message: "no macros directory at \(config.macrosDirectory) (set --macros or macros_dir in the config)")
        }
        library = MacroLibrary(directory: config.macrosDirectory, engine: engine, logger: logger)
        stallWatch = LocalStallGuard.install(engine: engine, library: library, grace: config.stallGrace, json: options.json)
    }

    static func restore(_ model: ProgressModel, from store: StateStore) throws {
        do {
            if case .corrupt(let reason, let movedTo) = try store.restore(into: model) {
                Console.error("macro: warning: state file \(store.path) is corrupt (\(reason)); kept as \(movedTo), starting from the defaults")
            }
        } catch let error as MacroError {
            throw Failure(exit: 74, kind: "io", message: Session.describeStateError(error, path: store.path))
        }
    }

    /// A state-file error in words: a directory, a permission, or what the system said.
    static func describeStateError(_ error: MacroError, path: String) -> String {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue {
            return "the state file \(path) is a directory; --state (or state_file) names a file, e.g. \(path)/state.json"
        }
        return error.message
    }

    /// A logger that prints nothing (for throwaway engines).
    static var quietLogger: Logger {
        var logger = Logger(label: "macro") { _ in SwiftLogNoOpLogHandler() }
        logger.logLevel = .critical
        return logger
    }
}
