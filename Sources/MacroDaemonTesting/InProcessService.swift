import Logging
import MacroBase
import MacroDaemon
import MacroEngineCore
import MacroRPC
import Synchronization

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
    private let gateway: RPCGateway
    /// Connections on the engine's loop with its busy control (made at the first
    /// ``connectOnEngineLoop()``).
    private let engineLoop: Mutex<EngineLoopClients?> = Mutex(nil)
    private let logger: Logger

    /// Builds the service for `config` and loads its macros directory. `queueLimit` and
    /// `maxInFlight` are `queue_limit` and `connection_in_flight`; the history keeps what
    /// `config`'s `history_versions`, `history_bytes` and `audit_entries` say.
    package init(
        config: MacroConfig, queueLimit: Int = 1024, maxInFlight: Int = 64, maxLineBytes: Int = 1 << 20,
        logger: Logger = Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }
    ) throws {
        environment = try EngineEnvironment(config: config, name: "in-process", logger: logger)
        var settings = HostSettings(queueLimit: queueLimit, socket: "in-process")
        settings.history = HistoryLimits(versions: config.historyVersions, bytes: config.historyBytes)
        settings.auditEntries = config.auditEntries
        host = EngineHost(
            environment: environment, hub: NotificationHub(), settings: settings, version: "test", logger: logger)
        gateway = RPCGateway(host: host, channels: config.channels)
        pipeline = ClientPipeline(host: host, allowedUIDs: [], maxLineBytes: maxLineBytes, maxInFlight: maxInFlight, logger: logger)
        self.logger = logger
        _ = try environment.library.reload()
    }

    deinit { engineLoop.withLock { $0 }?.stop() }

    /// A new client connection with the socket's pipeline; `peer` stands for the credentials
    /// `SO_PEERCRED` would give (a test's channel has none).
    package func connect(peer: PeerCredentials? = nil) async throws -> InProcessClient {
        var pipeline = pipeline
        pipeline.assumedPeer = peer
        return try await InProcessClient(pipeline: pipeline, adopted: false)
    }

    /// A client on macrod's default path (`io_thread: engine`): a socket pair whose server end
    /// the socket's pipeline, with its busy gate, reads on the engine's loop, and a busy control
    /// thread that answers control requests while JavaScript holds that loop. Blocking, as the
    /// CLI's client is: call it off the test's task executor for long waits.
    package func connectOnEngineLoop() async throws -> RPCClient {
        RPCClient(connectedDescriptor: try await engineLoopDescriptor(), name: "in-process (engine loop)")
    }

    /// ``connectOnEngineLoop()``'s connection as the client's descriptor (for a client made on
    /// another thread: `RPCClient(connectedDescriptor:name:)`).
    package func engineLoopDescriptor() async throws -> Int32 {
        let clients = engineLoop.withLock { clients in
            if let clients { return clients }
            let made = EngineLoopClients(host: host, logger: logger)
            clients = made
            return made
        }
        return try await clients.connect()
    }

    /// A dashboard session: requests through the dashboard's gateway, as its WebSocket sends them.
    package func dashboard() async throws -> InProcessDashboard {
        try await InProcessDashboard(gateway: gateway)
    }

    /// A connection as an engine restart hands it over: nothing it reads is handled before
    /// ``InProcessClient/feedHandedOver(_:)`` gives it the bytes the previous process read.
    package func adopt() async throws -> InProcessClient {
        try await InProcessClient(pipeline: pipeline, adopted: true)
    }
}
