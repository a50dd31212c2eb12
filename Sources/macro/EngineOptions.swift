import ArgumentParser
import Foundation
import Logging
import MacroEngineCore

/// Options shared by the commands that load macros.
struct EngineOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("The config file (YAML). Default: $MACROENGINE_CONFIG, else built-in defaults.", valueName: "file"))
    var config: String?

    @Option(name: .long, help: ArgumentHelp("The macros directory (overrides the config's macros_dir; default ./macros).", valueName: "dir"))
    var macros: String?

    @Option(name: .long, help: ArgumentHelp("The state file holding the progress values (overrides state_file).", valueName: "file"))
    var state: String?

    @Option(name: .customLong("timeout-ms"), help: ArgumentHelp("Deadline for the whole call in milliseconds, awaited time included (default: call_deadline_ms 30000; a synchronous run also stops at time_limit_ms 5000).", valueName: "n"))
    var timeoutMs: Int?

    @Option(name: .long, help: ArgumentHelp("Talk to the macrod on this socket (exit 69 if none answers). Default: $MACROENGINE_SOCKET, else the standard path.", valueName: "path"))
    var socket: String?

    @Flag(name: .long, help: "Run in this process even when a daemon is running.")
    var local = false

    @Flag(name: .long, help: "Print machine-readable JSON on stdout.")
    var json = false

    @Flag(name: .shortAndLong, help: "Log engine activity to stderr.")
    var verbose = false

    func validate() throws {
        if let timeoutMs, timeoutMs <= 0 || timeoutMs > 86_400_000 {
            throw ValidationError("--timeout-ms must be between 1 and 86400000, got \(timeoutMs)")
        }
    }

    /// The config with command-line overrides applied. Exits 78 on an invalid config.
    func resolvedConfig() throws -> MacroConfig {
        let path = MacroConfig.filePath(explicit: config)
        var resolved = MacroConfig()
        if let path {
            do {
                resolved = try MacroConfig.load(file: path)
            } catch {
                Console.error("macro: invalid config: \(error)")
                throw Exit.config
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
            Console.error("macro: no macros directory at \(config.macrosDirectory) (set --macros or macros_dir in the config)")
            throw Exit.noSuchMacro
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
            Console.error("macro: \(error.message)")
            throw Exit.ioError
        }
    }
}
