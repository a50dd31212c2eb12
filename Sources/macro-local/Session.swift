import Foundation
import Logging
import MacroCLI
import MacroEngineCore

/// An engine with the progress model, saved state and the macro library loaded: the one
/// assembly macrod uses too (``EngineEnvironment``: `session.engine`, `session.model`,
/// `session.library`, `session.store`, `session.config` are its parts), with the CLI's console
/// and stall guard.
@dynamicMemberLookup
struct Session {
    /// The engine, the model, the state store, the library and the config they came from.
    let environment: EngineEnvironment
    let logger: Logger
    /// Stops the command when JavaScript keeps the engine busy beyond what its watchdog can stop.
    let stallWatch: StallWatch

    /// A part of the environment, by its name there.
    subscript<Part>(dynamicMember part: KeyPath<EngineEnvironment, Part>) -> Part { environment[keyPath: part] }

    /// Builds the session. Exits 66 when the macros directory is missing and `needsDirectory`.
    init(options: EngineOptions, loadState: Bool = true, needsDirectory: Bool = true) throws {
        let config = try options.resolvedConfig()
        var logger = Logger(label: "macro") { StreamLogHandler.standardError(label: $0) }
        logger.logLevel = options.verbose ? .debug : .critical
        self.logger = logger
        let environment = try EngineEnvironment(config: config, logger: logger)
        let engine = environment.engine
        engine.exceptionHandler = { [logger] error in MacroEngine.report(error, to: logger) }
        // console.* of the macro goes to stderr, so a person running it sees it.
        engine.consoleHandler = { message in
            let level = message.level == .info ? "" : "\(message.level): "
            Console.error("[\(message.macro ?? "macro")] \(level)\(message.message)")
        }
        if loadState { try Self.restore(environment) }
        var isDirectory: ObjCBool = false
        let exists = FileManager.default.fileExists(atPath: config.macrosDirectory, isDirectory: &isDirectory)
        guard !needsDirectory || (exists && isDirectory.boolValue) else {
            throw Failure(exit: 66, kind: "noSuchMacro", message: "no macros directory at \(config.macrosDirectory) (set --macros or macros_dir in the config)")
        }
        self.environment = environment
        stallWatch = LocalStallGuard.install(engine: engine, library: environment.library, grace: config.stallGrace, json: options.json)
    }

    static func restore(_ environment: EngineEnvironment) throws {
        let store = environment.store
        var warnings: [StateWarning] = []
        defer { for warning in warnings { Console.error("macro: warning: \(warning.message)") } }
        do {
            if case .corrupt(let reason, let movedTo) = try environment.restoreState(warnings: &warnings) {
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
