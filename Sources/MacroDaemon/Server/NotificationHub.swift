import Logging
import MacroEngineCore
import MacroRPC
import NIOCore
import Synchronization

/// The events a connection can subscribe to.
enum EventKind: String, CaseIterable, Sendable {
    case progress, macros, log, runs
}

/// How a connection's channel carries one outgoing JSON message: a line on the Unix socket,
/// a text frame on the dashboard's WebSocket.
package protocol MessageFraming: Sendable {
    /// Writes and flushes `message` on `channel`. Called from any thread.
    func write(_ message: RPCMessage, to channel: any Channel)
    /// Completes once everything written to `channel` before it has been written (an empty write).
    func drained(_ channel: any Channel) -> EventLoopFuture<Void>
}

/// One JSON text per line (the Unix socket): the message goes down the pipeline as it is, and
/// ``ConnectionHandler`` encodes it, as it encodes the replies (one write path per socket).
struct LineFraming: MessageFraming {
    func write(_ message: RPCMessage, to channel: any Channel) {
        channel.writeAndFlush(ConnectionOutput.message(message), promise: nil)
    }

    func drained(_ channel: any Channel) -> EventLoopFuture<Void> {
        channel.writeAndFlush(ConnectionOutput.bytes(channel.allocator.buffer(capacity: 0)))
    }
}

/// One client connection, as the hub and the engine host see it.
package final class Connection: Sendable {
    let channel: any Channel
    let id: Int
    /// The bytes read but not yet a whole line (handed over on an engine restart).
    let pendingInput: PendingInput
    /// The kernel's socket cookie (SO_COOKIE), which finds the descriptor again for a hand-over.
    let cookie = Atomic<UInt64>(0)
    /// This connection's requests waiting for or running on the engine.
    let engineRequests = Atomic<Int>(0)
    /// True when the peer is macrod's own user (or holds the dashboard's token): only then does
    /// `engine.status` show the dashboard's URL with its token. A socket connection starts false
    /// and is set from its `SO_PEERCRED` (a uid in `allowed_uids` may call macros, not see the token).
    let peerIsOwner = Atomic<Bool>(true)
    /// A socket peer's credentials (`SO_PEERCRED`), once read: who its changes are audited as.
    let peer = Mutex<PeerCredentials?>(nil)
    /// Reply bytes encoded for it that the kernel has not taken (``ReplyBudget``).
    let owedBytes = Atomic<Int>(0)
    /// Its share: the channel's write high-water mark (`connection_buffer_bytes`).
    let owedLimit = Atomic<Int>(1 << 20)
    /// The engine lane holds requests of it until it drains.
    let parked = Atomic<Bool>(false)
    /// It was closed for not reading its notifications (logged once).
    let droppedBehind = Atomic<Bool>(false)
    /// The count of every connection's owed bytes.
    let replyBudget: ReplyBudget
    private let framing: any MessageFraming
    private let events = Mutex<Set<EventKind>>([])
    private let counts: SubscriberCounts
    /// What writes the replies routed to it (``ReplyRoute/connection(_:)``): its transport's
    /// handler, on its loop (nil: the replies go out as messages, ``send(_:)``).
    let receiver: NIOLoopBound<any ReplyReceiver>?

    init(
        channel: any Channel, id: Int, pendingInput: PendingInput, framing: any MessageFraming = LineFraming(),
        counts: SubscriberCounts = SubscriberCounts(), receiver: NIOLoopBound<any ReplyReceiver>? = nil, replyBudget: ReplyBudget = ReplyBudget()
    ) {
        self.replyBudget = replyBudget
        self.channel = channel
        self.id = id
        self.pendingInput = pendingInput
        self.framing = framing
        self.counts = counts
        self.receiver = receiver
    }

    /// Writes `reply` through the connection's receiver and flushes it, from any thread (a hop
    /// to the connection's loop when called elsewhere).
    func deliver(_ reply: RPCMessage?) {
        guard let receiver else {
            if let reply { send(reply) }
            return
        }
        if channel.eventLoop.inEventLoop {
            receive(reply)
            receiver.value.flushReplies()
        } else {
            channel.eventLoop.execute {
                receiver.value.receive(reply)
                receiver.value.flushReplies()
            }
        }
    }

    /// Writes `reply` through the receiver without flushing; on the connection's loop.
    func receive(_ reply: RPCMessage?) {
        if let receiver { receiver.value.receive(reply) } else if let reply { send(reply) }
    }

    /// Flushes what ``receive(_:)`` wrote; on the connection's loop.
    func flushReplies() {
        receiver?.value.flushReplies()
    }

    var subscriptions: Set<EventKind> { events.locked { $0 } }

    /// True for a Unix-socket client (line framing): the kind an engine restart hands over.
    var isSocket: Bool { framing is LineFraming }

    /// Who this connection's changes are audited as: a socket client with its peer's uid and pid,
    /// or a dashboard session (a WebSocket or `POST /rpc`) by its number.
    package var actor: AuditActor {
        guard isSocket else { return AuditActor(.dashboard, session: id) }
        let peer = peer.withLock { $0 }
        return AuditActor(.socket, uid: peer?.uid, pid: peer?.pid)
    }

    /// Adds `kinds` to the subscriptions; returns them all.
    func subscribe(_ kinds: [EventKind]) -> Set<EventKind> {
        events.locked { events in
            let added = Set(kinds).subtracting(events)
            events.formUnion(added)
            counts.add(added, 1)
            return events
        }
    }

    /// Removes `kinds` from the subscriptions; returns those left.
    func unsubscribe(_ kinds: [EventKind]) -> Set<EventKind> {
        events.locked { events in
            let removed = events.intersection(kinds)
            events.subtract(removed)
            counts.add(removed, -1)
            return events
        }
    }

    /// Ends every subscription (the connection is gone).
    func unsubscribeAll() { _ = unsubscribe(EventKind.allCases) }

    /// Writes one message in the connection's framing (a line, or a WebSocket text frame).
    /// Safe from any thread; NIO keeps the order of writes made from one thread.
    func send(_ message: RPCMessage) {
        framing.write(message, to: channel)
    }

    /// Completes once everything written to the connection before it has been written.
    func drained() -> EventLoopFuture<Void> {
        framing.drained(channel)
    }
}

/// A notification and the connections it is addressed to (``NotificationHub/prepare(_:_:_:)``).
struct PreparedNotification: Sendable {
    let message: RPCMessage
    let targets: [Connection]
}

/// Delivers notifications to the connections subscribed to them.
package final class NotificationHub: Sendable {
    private let connections = Mutex<[Int: Connection]>([:])
    private let nextID = Atomic<Int>(0)
    private let counts = SubscriberCounts()
    /// The reply bytes its connections owe together.
    let replyBudget = ReplyBudget()

    private let logger: Logger?

    /// A hub with no connections; `logger` hears of the subscribers it drops.
    package init(logger: Logger? = nil) { self.logger = logger }

    func register(
        _ channel: any Channel, pendingInput: PendingInput = PendingInput(), framing: any MessageFraming = LineFraming(),
        receiver: NIOLoopBound<any ReplyReceiver>? = nil
    ) -> Connection {
        let connection = Connection(
            channel: channel, id: nextID.add(1, ordering: .relaxed).newValue, pendingInput: pendingInput,
            framing: framing, counts: counts, receiver: receiver, replyBudget: replyBudget)
        connections.locked { $0[connection.id] = connection }
        return connection
    }

    func unregister(_ connection: Connection) {
        guard connections.locked({ $0.removeValue(forKey: connection.id) }) != nil else { return }
        connection.unsubscribeAll()
    }

    var count: Int { connections.locked { $0.count } }
    var all: [Connection] { connections.locked { Array($0.values) } }

    /// Sends `method(params)` to every connection subscribed to `kind`.
    func publish(_ kind: EventKind, _ method: String, _ params: MacroValue) {
        if let prepared = prepare(kind, method, params) { deliver(prepared) }
    }

    /// A notification addressed now, to whoever is subscribed to `kind` at this moment (nil:
    /// nobody), to be sent later with ``deliver(_:)``: a change held for a group commit goes to
    /// the subscribers of the time it happened, not to one that subscribed after it.
    func prepare(_ kind: EventKind, _ method: String, _ params: MacroValue) -> PreparedNotification? {
        guard counts.any(kind) else { return nil }
        let targets = connections.locked { $0.values.filter { $0.subscriptions.contains(kind) } }
        guard !targets.isEmpty else { return nil }
        return PreparedNotification(message: RPCCodec.notification(method, params), targets: targets)
    }

    /// Sends a prepared notification to the connections it was addressed to.
    func deliver(_ prepared: PreparedNotification) {
        let message = prepared.message
        for connection in prepared.targets {
            // Writability drops at the connection_buffer_bytes high-water mark (1 MiB): a subscriber that far behind is
            // not reading; drop the connection instead of buffering without bound.
            guard connection.channel.isWritable else {
                if !connection.droppedBehind.exchange(true, ordering: .relaxed) {
                    logger?.warning(
                        "closed connection \(connection.id): it subscribed to \(connection.subscriptions.map(\.rawValue).sorted().joined(separator: ", ")) and stopped reading while connection_buffer_bytes of output waited for it"
                    )
                }
                connection.channel.close(promise: nil)
                continue
            }
            connection.send(message)
        }
    }

    /// True when someone listens to `kind` (so callers can skip building the message).
    func hasSubscribers(_ kind: EventKind) -> Bool { counts.any(kind) }

    private let recent = Mutex<(records: [(record: MacroValue, bytes: Int)], bytes: Int)>(([], 0))
    /// The ring keeps the last 200 records, and at most ``recentBytes`` of messages in all.
    static let recentLimit = 200
    /// The ring's byte bound: a macro logging megabytes cannot grow macrod through it.
    static let recentBytes = 1 << 20
    /// A log message longer than this is cut (the ring, subscribers; console lines are already
    /// cut at 65,536 characters in JavaScript).
    static let messageLimit = 80 << 10

    /// Keeps a log record (`{time, level, message, metadata}`) for `log.recent` and sends it to
    /// `log` subscribers.
    func log(_ params: MacroValue) {
        let bytes = params["message"].stringValue?.utf8.count ?? 0
        recent.locked { ring in
            ring.records.append((params, bytes))
            ring.bytes += bytes
            while ring.records.count > Self.recentLimit || (ring.bytes > Self.recentBytes && ring.records.count > 1) {
                ring.bytes -= ring.records.removeFirst().bytes
            }
        }
        publish(.log, RPCNotification.log.rawValue, params)
    }

    /// The last `limit` log records, oldest first.
    func recentLogs(limit: Int) -> [MacroValue] {
        recent.locked { $0.records.suffix(limit).map(\.record) }
    }

    /// `message`, cut to ``messageLimit`` bytes with a note of how much was cut.
    static func capped(_ message: String) -> String {
        let count = message.utf8.count
        guard count > messageLimit else { return message }
        // A character cut in two at the end shows as U+FFFD.
        return String(decoding: message.utf8.prefix(messageLimit), as: UTF8.self) + "\u{2026} [\(count - messageLimit) more bytes cut]"
    }
}

/// Forwards log records to `log` subscribers (next to the normal handler, via MultiplexLogHandler).
struct HubLogHandler: LogHandler {
    let hub: NotificationHub
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .info

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var fields = OrderedFields()
        for (key, value) in LogRecordFormat.ordered(metadata.merging(event.metadata ?? [:], uniquingKeysWith: { _, new in new })) {
            fields[key] = .string(value)
        }
        hub.log([
            "time": .string(LogRecordFormat.timestamp()), "level": .string(event.level.rawValue),
            "message": .string(NotificationHub.capped("\(event.message)")), "metadata": .object(fields),
        ])
    }
}
