import Foundation
import Logging
import MacroEngineCore

#if canImport(Glibc)
import Glibc
#endif

/// The end of serving, once the socket and the dashboard have stopped: closes the connections
/// still open (no request may change the model after it is saved), writes the state, and only
/// then removes the socket file. Armed once the socket listens: a macrod that never served
/// leaves both alone. A state it cannot save is exit 74, not 0.
final class StateSaveService: DaemonService {
    private let host: EngineHost
    private let model: ProgressModel
    private let socketPath: String
    private let logger: Logger

    /// Saves `model` through `host`'s journal and removes `socketPath`.
    init(host: EngineHost, model: ProgressModel, socketPath: String, logger: Logger) {
        self.host = host
        self.model = model
        self.socketPath = socketPath
        self.logger = logger
    }

    /// Nothing: it only acts at the end.
    func start() {}

    /// Closes the connections, saves the state, removes the socket file. Throws
    /// ``MacroDaemonError`` (`stateNotSaved`) when the state could not be saved.
    func stop() async throws {
        for connection in host.hub.all { try? await connection.channel.close() }
        var unsaved: (any Error)?
        do {
            try host.persistence.close()
        } catch {
            logger.error("cannot save the state on shutdown: \(StatePersistence.describe(error))")
            unsaved = error
        }
        unlink(socketPath)
        if let unsaved {
            // Exit 74 (EX_IOERR), not 0: a supervisor or a script must see that values were lost.
            throw MacroDaemonError(
                code: .stateNotSaved,
                message: "macrod stopped without saving the state (exit 74): \(StatePersistence.describe(unsaved))")
        }
    }
}
