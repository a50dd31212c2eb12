import Logging
import NIOCore

/// The handlers of a client connection on the Unix socket, accepted or handed over by an engine
/// restart: the busy gate (connections on the engine's loop), the line decoder and the
/// ``ConnectionHandler`` (which also holds reads while the channel is not writable, as NIO's
/// `BackPressureHandler` would: one handler fewer per event). The one place that knows their order.
package struct ClientPipeline: Sendable {
    let host: EngineHost
    let allowedUIDs: [UInt32]
    let maxLineBytes: Int
    let maxInFlight: Int
    let busyControl: BusyControl?
    /// The credentials a connection whose channel has no `SO_PEERCRED` (a test's) stands for.
    package var assumedPeer: PeerCredentials?

    let logger: Logger

    /// The pipeline of `host`'s clients.
    package init(host: EngineHost, allowedUIDs: [UInt32], maxLineBytes: Int, maxInFlight: Int, logger: Logger) {
        self.init(host: host, allowedUIDs: allowedUIDs, maxLineBytes: maxLineBytes, maxInFlight: maxInFlight, busyControl: nil, logger: logger)
    }

    /// With `busyControl`: connections on the engine's loop get a ``BusyGate``.
    init(host: EngineHost, allowedUIDs: [UInt32], maxLineBytes: Int, maxInFlight: Int, busyControl: BusyControl?, logger: Logger) {
        self.host = host
        self.allowedUIDs = allowedUIDs
        self.maxLineBytes = maxLineBytes
        self.maxInFlight = maxInFlight
        self.busyControl = busyControl
        self.logger = logger
    }

    /// Adds the handlers to `channel`'s pipeline, on its loop.
    package func install(on channel: any Channel) throws {
        try install(on: channel, subscriptions: [])
    }

    /// Adds the handlers of an adopted connection (a socket handed over by an engine restart):
    /// nothing it reads is handled before ``feed(_:_:)`` gives it the bytes read for it before.
    package func installAdopted(on channel: any Channel) throws {
        try install(on: channel, subscriptions: [], adopted: true)
    }

    /// Gives an adopted connection the bytes read for it before it was adopted; then what it
    /// read meanwhile, then its end of input if it came (on the channel's loop).
    package static func feed(_ channel: any Channel, _ bytes: [UInt8]) {
        channel.pipeline.fireUserInboundEventTriggered(HandoverInput.Feed(bytes: bytes))
    }

    /// Adds the handlers of a connection handed over with `subscriptions`. `adopted`: a socket
    /// macrod already held (an engine restart, the busy control), whose earlier bytes come first
    /// (``HandoverInput``).
    func install(on channel: any Channel, subscriptions: [EventKind], adopted: Bool = false) throws {
        let pending = PendingInput()
        let gate = busyControl.flatMap { channel.eventLoop === host.engine.eventLoop ? BusyGate(control: $0) : nil }
        let pipeline = channel.pipeline.syncOperations
        if adopted { try pipeline.addHandler(HandoverInput()) }
        if let gate { try pipeline.addHandler(gate) }
        try pipeline.addHandler(ByteToMessageHandler(LineDecoder(maximumLength: maxLineBytes, pending: pending)))
        try pipeline.addHandler(
            ConnectionHandler(
                host: host, allowedUIDs: allowedUIDs, maxLineBytes: maxLineBytes, maxInFlight: maxInFlight, logger: logger,
                pendingInput: pending, subscriptions: subscriptions, busyGate: gate, assumedPeer: assumedPeer))
    }
}
