import Foundation
import Logging
import MacroEngineCore
import MacroRPC
import NIOCore
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// macrod's last resort when its engine is stuck in JavaScript that JavaScriptCore cannot
/// interrupt (see ``StallWatch``): answer every request in flight, then re-execute macrod with
/// its listening socket and client connections handed over (``Handover``).
///
/// What a client sees: the stuck call gets -32001 (reason `timeout`, or `cancelled` when it was
/// cancelled) and a pending `macro.cancel` of it gets `cancelled: true`; every other request in
/// flight gets -32006 (engine restarted; nothing of it was kept). Requests not yet read stay in
/// the socket and are answered by the new process; connections and their subscriptions stay
/// open. The state is the journal's: every answered call's values, never the stuck turn's.
final class StallRecovery: Sendable {
    private let host: EngineHost
    private let hub: NotificationHub
    private let logger: Logger
    private let directory: String
    private let previous: Handover?
    /// The listening socket's cookie, once macrod listens.
    let listenerCookie = Atomic<UInt64>(0)
    /// More restarts than this within ``budgetWindow`` and macrod exits instead (systemd restarts it).
    static let budget = 5
    static let budgetWindow: Double = 60

    init(host: EngineHost, hub: NotificationHub, socketPath: String, previous: Handover?, logger: Logger) {
        self.host = host
        self.hub = hub
        self.logger = logger
        self.previous = previous
        self.directory = (socketPath as NSString).deletingLastPathComponent
    }

    /// Runs on the stall watch's thread; does not return (the process is replaced, or exits 70).
    func recover(_ stall: StallWatch.Stall) -> Never {
        host.beginRestart()
        let occupancy = stall.occupancy
        let doing = occupancy.loadingFile.map { "loading \($0)" } ?? (occupancy.call != 0 ? "call \(occupancy.call)" : "a timer or promise job")
        let reason = stall.residentBytes.map { "the process reached \($0 >> 20) MiB (1.5 x memory_limit_mb) after \(stall.stuckMilliseconds) ms in JavaScript (\(doing)) that the watchdog cannot reach" }
            ?? "the engine was stuck in JavaScript for \(stall.stuckMilliseconds) ms (\(doing)), past its budget\(stall.cancelled ? " and a cancel" : "") plus stall_grace_ms, in a way JavaScriptCore cannot interrupt (an endless chain of promise jobs?)"
        logger.critical("\(reason); restarting the engine (connections, subscriptions and every answered call's state are kept)")

        let connections = hub.all
        // With `io_thread: engine` the connections live on the stuck loop itself: nothing runs
        // there any more, so their replies are written straight to their sockets below.
        let stuckLoop = host.engine.eventLoop
        let live = connections.filter { $0.channel.eventLoop !== stuckLoop }
        // 1. Read nothing more: what clients send from now on is read by the next process.
        wait(live.map { connection in connection.channel.setOption(ChannelOptions.autoRead, value: false) })
        // 2. Answer every request in flight, exactly once.
        let names = Dictionary(host.engine.runningCalls.map { ($0.id, $0.macro) }, uniquingKeysWith: { a, _ in a })
        var replay: [Int: [UInt8]] = [:]
        var direct: [Int: [UInt8]] = [:]
        for entry in host.inFlight.takeAll() {
            // Never started on the engine: the next process runs it, as if it arrived there.
            if let request = entry.request, let connection = entry.connection, entry.started?.isSet == false {
                replay[connection.id, default: []] += Array(Self.line(request).utf8)
                unanswered.locked { $0.append(entry.promise) }
                continue
            }
            guard let id = entry.id else {
                entry.promise.succeed(nil)
                continue
            }
            let message = reply(to: entry.kind, id: id, stall: stall, names: names)
            if let connection = entry.connection, connection.channel.eventLoop === stuckLoop {
                direct[connection.id, default: []] += message.bytes
                direct[connection.id, default: []].append(UInt8(ascii: "\n"))
                unanswered.locked { $0.append(entry.promise) }
            } else {
                entry.promise.succeed(message)
            }
        }
        // 3. Flush: an empty write completes after everything written before it.
        wait(live.map { connection in
            connection.channel.eventLoop.flatSubmit {
                connection.channel.writeAndFlush(connection.channel.allocator.buffer(capacity: 0))
            }
        })
        // 4. Hand over the sockets and what the next process must know.
        var handover = Handover()
        let descriptors = SocketCookie.descriptorsByCookie()
        let listener = listenerCookie.load(ordering: .relaxed)
        handover.listener = listener == 0 ? nil : descriptors[listener]
        for connection in connections where connection.channel.isActive {
            guard let fd = descriptors[connection.cookie.load(ordering: .relaxed)] else { continue }
            if let bytes = direct[connection.id] { Self.writeAll(bytes, to: fd) }
            handover.clients.append(.init(
                fd: fd, cookie: connection.cookie.load(ordering: .relaxed), subscriptions: connection.subscriptions.map(\.rawValue).sorted(),
                pendingInput: (replay[connection.id] ?? []) + connection.pendingInput.current))
        }
        handover.quarantine = previous?.quarantine ?? Quarantine()
        if let file = occupancy.loadingFile, let hash = occupancy.loadingHash {
            handover.quarantine.add(file, hash: hash, stuckMilliseconds: stall.stuckMilliseconds)
        }
        let now = Double(NIODeadline.now().uptimeNanoseconds) / 1e9
        handover.restarts = (previous?.restarts ?? []).filter { now - $0 < Self.budgetWindow } + [now]
        handover.totalRestarts = (previous?.totalRestarts ?? 0) + 1
        handover.reason = reason
        handover.stalledAt = Date().timeIntervalSince1970
        guard handover.restarts.count <= Self.budget else {
            logger.critical("the engine stalled \(handover.restarts.count) times within \(Int(Self.budgetWindow)) s; exiting (70) for the service manager to restart macrod")
            exit(70)
        }
        let failure = handover.execute(directory: directory)
        logger.critical("cannot restart the engine: \(failure); exiting (70) for the service manager to restart macrod")
        exit(70)
    }

    /// Writes `bytes` to a (non-blocking) socket, waiting up to a second for room.
    static func writeAll(_ bytes: [UInt8], to fd: Int32) {
        var offset = 0
        let giveUp = NIODeadline.now() + .seconds(1)
        while offset < bytes.count, NIODeadline.now() < giveUp {
            let n = bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n > 0 { offset += n; continue }
            if n < 0, errno != EAGAIN, errno != EINTR { return }
            var poller = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            _ = poll(&poller, 1, 50)
        }
    }

    /// Promises handed to the next process instead of answered here: kept until `exec`.
    private let unanswered = Mutex<[EventLoopPromise<RPCMessage?>]>([])

    /// A request as a protocol line again.
    static func line(_ request: RPCRequest) -> String {
        var text = #"{"jsonrpc":"2.0""#
        // The id as the client wrote it, so the next process echoes it byte for byte too.
        if let id = request.id { text += #","id":"# + id.json }
        text += #","method":"# + MacroValue.string(request.method).jsonText()
        if request.params != .undefined { text += #","params":"# + request.params.jsonText() }
        return text + "}\n"
    }

    private func reply(to kind: InFlightRequests.Kind, id: RPCID, stall: StallWatch.Stall, names: [Int: String]) -> RPCMessage {
        switch kind {
        case .cancel(let call):
            return RPCCodec.response(id: id, result: ["call": .number(Double(call)), "cancelled": true])
        case .call(let call) where call == stall.occupancy.call || host.engine.isCancelRequested(call):
            let cancelled = host.engine.isCancelRequested(call) || (call == stall.occupancy.call && stall.cancelled)
            if let resident = stall.residentBytes, call == stall.occupancy.call, !cancelled {
                let error = MacroError(
                    code: .memoryLimit,
                    message: "stopped: the process reached \(resident >> 20) MiB, 1.5 x memory_limit_mb, while this macro ran JavaScript the watchdog cannot reach (allocating in an endless chain of promise jobs?); the engine was restarted",
                    macro: names[call])
                return RPCCodec.response(id: id, error: RPCError(error))
            }
            let error = cancelled
                ? MacroError(code: .cancelled, message: "cancelled (the engine was restarted to stop it)", macro: names[call])
                : MacroError(
                    code: .timeout,
                    message: "stopped: it kept the engine busy for \(stall.stuckMilliseconds) ms, past its time limit plus stall_grace_ms (an endless chain of promise jobs?); the engine was restarted",
                    macro: names[call])
            return RPCCodec.response(id: id, error: RPCError(error))
        case .call, .other:
            return RPCCodec.response(id: id, error: EngineHost.restartError)
        }
    }

    /// Waits for the futures, at most one second in all (a client that does not read loses its
    /// last replies rather than hold the restart).
    private func wait<T: Sendable>(_ futures: [EventLoopFuture<T>]) {
        let done = DispatchSemaphore(value: 0)
        let remaining = Atomic<Int>(futures.count)
        guard !futures.isEmpty else { return }
        for future in futures {
            future.whenComplete { _ in
                if remaining.subtract(1, ordering: .relaxed).newValue == 0 { done.signal() }
            }
        }
        _ = done.wait(timeout: .now() + 1)
    }
}
