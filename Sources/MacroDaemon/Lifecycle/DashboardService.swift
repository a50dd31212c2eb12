import MacroEngineCore

/// The listeners beside the socket (the dashboard). They listen before the socket, so
/// `engine.status` reports them from the first request; when one cannot start, macrod fails to
/// start. After an engine restart the dashboard keeps its listening socket (handed over).
final class DashboardService: DaemonService {
    private let frontends: [any DaemonFrontend]
    private let host: EngineHost
    private let channels: [ProgressChannel]
    private let handover: Handover?
    private let recovery: StallRecovery

    /// Serves `host` through `frontends`, resuming the ones `handover` kept listening.
    init(frontends: [any DaemonFrontend], host: EngineHost, channels: [ProgressChannel], handover: Handover?, recovery: StallRecovery) {
        self.frontends = frontends
        self.host = host
        self.channels = channels
        self.handover = handover
        self.recovery = recovery
    }

    /// Starts every frontend; when one cannot start, stops the ones that did and throws.
    func start() async throws {
        if let descriptor = handover?.httpListener { frontends.first?.inherit(listener: descriptor) }
        let gateway = RPCGateway(host: host, channels: channels)
        var started: [any DaemonFrontend] = []
        do {
            for frontend in frontends {
                gateway.setDashboard(try await frontend.start(gateway: gateway, resuming: handover != nil))
                started.append(frontend)
            }
        } catch {
            for frontend in started { await frontend.stop() }
            throw error
        }
        recovery.httpListener.locked { $0 = frontends.first?.listener }
    }

    /// Stops them (their connections close).
    func stop() async {
        for frontend in frontends { await frontend.stop() }
    }
}
