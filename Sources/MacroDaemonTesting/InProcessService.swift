import Logging
import MacroBase
import MacroDaemon
import MacroEngineCore
import MacroRPC

/// macrod's service without its socket, for tests: the engine a config describes, its host (the
/// router, the engine lane and its group commit, the methods) and the socket's client pipeline, driven
/// through ``InProcessClient``s on `NIOAsyncTestingChannel`s. Nothing listens and no process
/// starts, so a test of the middle layer runs in milliseconds and sees each byte written.
package final class InProcessService {
    /// The engine, the model, the state store and the library.
    package let environment: EngineEnvironment
    /// The engine side the clients talk to.
    package let host: EngineHost
    private let pipeline: ClientPipeline

    /// Builds the service for `config` and loads its macros directory. `queueLimit` and
    /// `maxInFlight` are `queue_limit` and `connection_in_flight`.
    package init(
        config: MacroConfig, queueLimit: Int = 1024, maxInFlight: Int = 64, maxLineBytes: Int = 1 << 20,
        logger: Logger = Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }
    ) throws {
        environment = try EngineEnvironment(config: config, name: "in-process", logger: logger)
        host = EngineHost(
            environment: environment, hub: NotificationHub(), settings: HostSettings(queueLimit: queueLimit, socket: "in-process"), version: "test",
            logger: logger)
        pipeline = ClientPipeline(host: host, allowedUIDs: [], maxLineBytes: maxLineBytes, maxInFlight: maxInFlight, logger: logger)
        _ = try environment.library.reload()
    }

    /// A new client connection with the socket's pipeline.
    package func connect() async throws -> InProcessClient {
        try await InProcessClient(pipeline: pipeline, adopted: false)
    }

    /// A connection as an engine restart hands it over: nothing it reads is handled before
    /// ``InProcessClient/feedHandedOver(_:)`` gives it the bytes the previous process read.
    package func adopt() async throws -> InProcessClient {
        try await InProcessClient(pipeline: pipeline, adopted: true)
    }
}
