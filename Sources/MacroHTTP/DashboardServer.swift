import Foundation
import Logging
import MacroDaemon
import MacroEngineCore
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// macrod's dashboard: an HTTP listener (swift-nio's HTTP/1.1 and WebSocket handlers) beside the
/// Unix socket, serving the page, a WebSocket at `/ws` carrying the socket's JSON-RPC, and
/// `POST /rpc`. Every request but the page's own files needs the token kept in a 0600 file beside
/// the socket, sent explicitly (never a cookie); `macro dashboard` opens the page with a one-time
/// code that the page trades for it.
package final class DashboardServer: DaemonFrontend {
    /// Where it listens.
    package let address: HTTPAddress
    private let allowRemote: Bool
    private let socketPath: String
    private let maxMessageBytes: Int
    private let maxInFlight: Int
    private let bufferBytes: Int
    private let files: StaticFiles
    private let logger: Logger
    private let state = Mutex<(group: MultiThreadedEventLoopGroup?, server: (any Channel)?, files: [String])>((nil, nil, []))
    /// HTTP and WebSocket connections open now (at most ``maxConnections``).
    private let connections = ConnectionCount()
    /// More dashboard connections than this are closed as soon as they are accepted, so idle or
    /// slow clients cannot use up macrod's descriptors (the Unix socket's clients need them).
    static let maxConnections = 128
    /// A connection that sends nothing for this long before its request is complete (slowloris),
    /// or between keep-alive requests, is closed. A WebSocket has no such limit.
    static let requestTimeout: TimeAmount = .seconds(10)

    /// The one-time codes `macro dashboard` opens the page with (`POST /code`, `POST /session`).
    private let codes = OneTimeCodes()

    /// The listening socket handed over by a stalled process (``inherit(listener:)``).
    private let inherited = Mutex<Int32?>(nil)

    /// The listening socket, once started.
    package var listener: (any Channel)? { state.locked { $0.server } }

    /// Listen on `descriptor` (handed over by an engine restart) instead of binding again.
    package func inherit(listener descriptor: Int32) { inherited.locked { $0 = descriptor } }

    /// A dashboard for the daemon on `socketPath`, with the config's limits (`max_line_bytes` is
    /// the largest message, `connection_in_flight` and `connection_buffer_bytes` as on the socket).
    package init(
        address: HTTPAddress, config: MacroConfig, socketPath: String, logger: Logger,
        codeMirrorRoot: String = "/usr/share/javascript/codemirror"
    ) {
        self.address = address
        self.allowRemote = config.httpAllowRemote
        self.socketPath = socketPath
        self.maxMessageBytes = config.maxLineBytes
        self.maxInFlight = config.connectionInFlight
        self.bufferBytes = config.connectionBufferBytes
        self.files = StaticFiles(codeMirrorRoot: codeMirrorRoot)
        self.logger = logger
    }

    /// Binds, writes the token file, and returns the URL with the token. When `resuming` (this
    /// process replaces a macrod whose engine stalled), the previous token and port are kept, so
    /// open pages reconnect by themselves.
    package func start(gateway: RPCGateway, resuming: Bool) async throws -> String {
        do {
            return try await listen(gateway: gateway, resuming: resuming)
        } catch {
            await stop()
            throw error.daemonError
        }
    }

    private func listen(gateway: RPCGateway, resuming: Bool) async throws(DashboardError) -> String {
        if !address.isLoopback {
            guard allowRemote else {
                throw DashboardError(
                    code: .notLoopback,
                    message: "http: \(address) is not a loopback address; the dashboard listens on 127.0.0.1, ::1 or localhost unless the config sets http_allow_remote: true")
            }
            logger.warning(
                "dashboard: listening on \(address), reachable from other machines (http_allow_remote: true); anyone who learns the token controls the engine, and the traffic is not encrypted"
            )
        }
        let tokenFile = DashboardToken.filePath(forSocket: socketPath)
        let addressFile = DashboardToken.addressPath(forSocket: socketPath)
        let previous = resuming ? DashboardToken(readingFrom: tokenFile) : nil
        let token = previous ?? DashboardToken()
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        state.locked { $0.group = group }
        let bootstrap = bootstrap(group: group, gateway: gateway, token: token)
        var server: (any Channel)?
        if let descriptor = inherited.locked({ $0 }) {
            // The same socket, never closed: its port could not be taken by anyone meanwhile.
            server = try? await bootstrap.withBoundSocket(descriptor).get()
            if server == nil { close(descriptor) }
        }
        if server == nil, resuming, let port = Self.previousPort(addressFile) ?? (address.port == 0 ? nil : address.port) {
            let closed = InheritedSockets.closeTCP(localPort: port)
            logger.debug("dashboard: closed \(closed) socket(s) of the stalled process on port \(port)")
            if previous != nil, address.port == 0 { server = try? await bootstrap.bind(host: address.host, port: port).get() }
        }
        // A new macrod with port 0 takes the port the last one had, when it is free.
        let portFile = DashboardToken.portPath(forSocket: socketPath)
        if server == nil, address.port == 0, let text = try? String(contentsOfFile: portFile, encoding: .utf8),
            let port = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)), (1...65535).contains(port)
        {
            server = try? await bootstrap.bind(host: address.host, port: port).get()
        }
        do {
            if server == nil { server = try await bootstrap.bind(host: address.host, port: address.port).get() }
        } catch {
            throw DashboardError(code: .bind, message: "dashboard: cannot listen on \(address): \(error)")
        }
        state.locked { $0.server = server }
        let port = server?.localAddress?.port ?? address.port
        let base = "http://\(HTTPAddress(host: address.host, port: port))/"
        state.locked { $0.files = [tokenFile, addressFile] }
        try token.write(to: tokenFile)
        try DashboardToken.writePrivate(base + "\n", to: addressFile)
        try? DashboardToken.writePrivate("\(port)\n", to: portFile)
        let url = "\(base)?token=\(token.value)"
        logger.info("dashboard on \(base) (token in \(tokenFile); `macro dashboard` prints the URL and opens it)")
        // On a terminal (make run), print the URL itself; never into logs, which others may read.
        if isatty(STDOUT_FILENO) != 0 {
            FileHandle.standardOutput.write(Data("dashboard: \(url)\n".utf8))
        }
        return url
    }

    private func bootstrap(group: MultiThreadedEventLoopGroup, gateway: RPCGateway, token: DashboardToken) -> ServerBootstrap {
        let guardian = RequestGuard(token: token, allowRemote: allowRemote)
        let files = files, logger = logger, maxBytes = maxMessageBytes, maxInFlight = maxInFlight, buffer = bufferBytes
        let connections = connections, codes = codes
        return ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 64)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.writeBufferWaterMark, value: .init(low: buffer / 4, high: buffer))
            .childChannelInitializer { channel in
                guard connections.value.add(1, ordering: .relaxed).newValue <= Self.maxConnections else {
                    connections.value.subtract(1, ordering: .relaxed)
                    logger.debug("dashboard: more than \(Self.maxConnections) connections; closing a new one")
                    return channel.close()
                }
                channel.closeFuture.whenComplete { _ in connections.value.subtract(1, ordering: .relaxed) }
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(IdleStateHandler(readTimeout: Self.requestTimeout), name: "dashboard-idle")
                    try channel.pipeline.syncOperations.addHandler(CloseWhenIdle(), name: "dashboard-close-idle")
                    let http = HTTPHandler(guardian: guardian, gateway: gateway, files: files, maxBodyBytes: maxBytes, codes: codes, logger: logger)
                    let upgrader = NIOWebSocketServerUpgrader(
                        maxFrameSize: maxBytes, automaticErrorHandling: true,
                        shouldUpgrade: { channel, head in
                            // Refused here, the request goes on to HTTPHandler, which answers the guard's status.
                            guard RequestGuard.path(of: head.uri) == "/ws", guardian.check(head) == .allow(authenticated: true) else {
                                return channel.eventLoop.makeSucceededFuture(nil)
                            }
                            // The page offers `macrod` and `macrod.token.TOKEN`: a browser fails the
                            // connection unless the server names one of them; never the token's.
                            var headers = HTTPHeaders()
                            if RequestGuard.subprotocols(head.headers).contains(RequestGuard.subprotocol) {
                                headers.add(name: "Sec-WebSocket-Protocol", value: RequestGuard.subprotocol)
                            }
                            return channel.eventLoop.makeSucceededFuture(headers)
                        },
                        upgradePipelineHandler: { channel, _ in
                            channel.eventLoop.makeCompletedFuture {
                                try channel.pipeline.syncOperations.addHandler(
                                    NIOWebSocketFrameAggregator(
                                        minNonFinalFragmentSize: 0, maxAccumulatedFrameCount: 1024, maxAccumulatedFrameSize: maxBytes))
                                try channel.pipeline.syncOperations.addHandler(WebSocketSession(gateway: gateway, maxInFlight: maxInFlight, logger: logger))
                            }
                        })
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(
                        withServerUpgrade: (
                            upgraders: [upgrader],
                            completionHandler: { context in
                                context.pipeline.syncOperations.removeHandler(name: "dashboard-http", promise: nil)
                                // A WebSocket may stay quiet for as long as it likes (a subscriber).
                                context.pipeline.syncOperations.removeHandler(name: "dashboard-idle", promise: nil)
                                context.pipeline.syncOperations.removeHandler(name: "dashboard-close-idle", promise: nil)
                            }
                        ))
                    try channel.pipeline.syncOperations.addHandler(http, name: "dashboard-http")
                }
            }
    }

    /// The port noted by the previous process (`http://HOST:PORT/`), if any.
    private static func previousPort(_ path: String) -> Int? {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8),
            let components = URLComponents(string: text.trimmingCharacters(in: .whitespacesAndNewlines))
        else { return nil }
        return components.port
    }

    /// For a macrod that serves no dashboard: removes the token and address files a macrod
    /// that ended without its shutdown (exit 70, `kill -9`) left beside `socketPath`.
    package static func removeStaleFiles(forSocket socketPath: String) {
        DashboardToken.removeStale(forSocket: socketPath)
    }

    /// Closes the listener and its connections, and removes the token file.
    package func stop() async {
        let (group, server, files) = state.locked { state in
            defer { state = (nil, nil, []) }
            return state
        }
        for file in files { unlink(file) }
        try? await server?.close()
        try? await group?.shutdownGracefully()
    }
}

/// Closes a connection that was idle past the ``IdleStateHandler``'s read timeout.
final class CloseWhenIdle: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .read? = event as? IdleStateHandler.IdleStateEvent {
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }
}

/// The number of open dashboard connections, shared by the listener's initializer and each
/// connection's close.
final class ConnectionCount: Sendable {
    let value = Atomic<Int>(0)
}
