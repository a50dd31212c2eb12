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
/// interrupt (see ``StallWatch``): blame the file whose code it was, answer every request in
/// flight, then re-execute macrod with its listening socket and client connections handed over
/// (``Handover``). macrod never exits because of a macro.
///
/// Whose fault (``CodeOwner``, recorded by the engine for every entry into JavaScript):
/// - a file that stalls while it loads is quarantined at once;
/// - a macro or lib file whose calls, timers or promise jobs stall the engine is quarantined at
///   its `stall_quarantine`-th stall within ``budgetWindow``: its callers are then refused at
///   once (-32007) until its file changes or `macro.unquarantine` lifts it;
/// - a stall no file answers for (`engine.eval`, the engine's own runs) counts against the
///   restart budget; past ``budget`` of those within ``budgetWindow``, the next process keeps
///   serving with JavaScript paused (-32008 for what needs it, `engine.resume` ends it).
///
/// What a client sees: the stuck call gets -32001 (reason `timeout`, or `cancelled` when it was
/// cancelled) and a pending `macro.cancel` of it gets `cancelled: true`. Requests that had not
/// started, requests read while the restart runs, and requests that finished but whose replies
/// were still held for their batch's commit (their effects only in the progress model: never
/// journaled, never published) are handed to the next process, which answers them as if they
/// had just arrived. Only requests that had started and had effects that cannot be undone
/// (an async call whose earlier turns committed, a `macro.save` that wrote its file) get -32006.
/// Connections and their subscriptions stay open; the state is the journal's.
final class StallRecovery: Sendable {
    private let host: EngineHost
    private let library: MacroLibrary
    private let hub: NotificationHub
    /// The busy control, with `io_thread: engine` (set once, before serving).
    let busyControl = Mutex<BusyControl?>(nil)
    private let logger: Logger
    private let previous: Handover?
    private let stallQuarantine: Int
    /// The listening socket's cookie, once macrod listens.
    let listenerCookie = Atomic<UInt64>(0)
    /// The listening socket, to stop accepting while the restart runs (new clients wait in the
    /// backlog for the next process).
    let listener = Mutex<(any Channel)?>(nil)
    /// The dashboard's listening socket, handed over like the Unix one.
    let httpListener = Mutex<(any Channel)?>(nil)
    /// Set when a graceful shutdown (SIGTERM/SIGINT) begins: it must survive the restart.
    let shutdownRequested = Atomic<Bool>(false)
    /// The stall watch that calls ``recover(_:)`` (set by the stall guard when it starts).
    let watch = Mutex<StallWatch?>(nil)

    /// The engine is still inside JavaScript when the shutdown's grace period is over: the
    /// watch takes it as a stall at its next tick instead of waiting for its budget and
    /// `stall_grace_ms` (the restart carries the shutdown over, and answers what is in flight).
    func hurry() { watch.withLock { $0?.hurry() } }
    /// More restarts that no file answers for than this within ``budgetWindow`` and JavaScript is paused.
    static let budget = 5
    static let budgetWindow: Double = 60
    /// At most this many bytes of requests are replayed in the next process (in all); past it,
    /// requests that had not started are answered -32006 (sending them again is safe).
    static let replayLimit = 64 << 20
    /// The whole restart (answering, flushing, handing over) takes at most this long; what a
    /// client does not read by then is not waited for.
    static let timeLimit: Double = 5

    init(host: EngineHost, library: MacroLibrary, hub: NotificationHub, previous: Handover?, stallQuarantine: Int, logger: Logger) {
        self.host = host
        self.library = library
        self.hub = hub
        self.logger = logger
        self.previous = previous
        self.stallQuarantine = stallQuarantine
    }

    /// The verdict on one stall: who answers for it, and what follows.
    struct Verdict {
        var quarantine: Quarantine
        /// The file this stall put in quarantine, if it did.
        var quarantined: Quarantine.File?
        /// Restarts no file answers for within the window, this one included if it is one.
        var restarts: [Double]
        var paused: Bool
    }

    /// Judges `stall` against what earlier restarts knew (`quarantine`, `restarts`) at `now`
    /// (uptime seconds).
    static func judge(_ stall: StallWatch.Stall, quarantine: Quarantine, restarts: [Double], paused: Bool, now: Double, stallQuarantine: Int) -> Verdict {
        var verdict = Verdict(quarantine: quarantine, quarantined: nil, restarts: restarts.filter { now - $0 < budgetWindow }, paused: paused)
        let occupancy = stall.occupancy
        if let file = occupancy.loadingFile, let hash = occupancy.loadingHash {
            verdict.quarantine.add(file, hash: hash, stuckMilliseconds: stall.stuckMilliseconds, macro: occupancy.owner?.macro)
            verdict.quarantined = verdict.quarantine.files.last
        } else if let owner = occupancy.owner {
            verdict.quarantined = verdict.quarantine.strike(owner, at: now, window: budgetWindow, limit: stallQuarantine, stuckMilliseconds: stall.stuckMilliseconds)
        } else {
            verdict.restarts.append(now)
            if verdict.restarts.count > budget { verdict.paused = true }
        }
        return verdict
    }

    /// Runs on the stall watch's thread; does not return (the process is replaced, or exits 70
    /// when it cannot be).
    func recover(_ stall: StallWatch.Stall) -> Never {
        let giveUp = NIODeadline.now() + .milliseconds(Int64(Self.timeLimit * 1000))
        host.beginRestart()
        let occupancy = stall.occupancy
        let doing =
            occupancy.loadingFile.map { "loading \($0)" }
            ?? occupancy.owner.map { occupancy.call != 0 ? "call \(occupancy.call) of \($0.label)" : "a timer or promise job of \($0.label)" }
            ?? (occupancy.call != 0 ? "call \(occupancy.call)" : "code no macro file answers for")
        let reason =
            stall.residentBytes.map {
                "the process reached \($0 >> 20) MiB (1.5 x memory_limit_mb) after \(stall.stuckMilliseconds) ms in JavaScript (\(doing)) that the watchdog cannot reach"
            }
            ?? "the engine was stuck in JavaScript for \(stall.stuckMilliseconds) ms (\(doing)), past its budget\(stall.cancelled ? " and a cancel" : "") plus stall_grace_ms, in a way JavaScriptCore cannot interrupt (an endless chain of promise jobs?)"
        let now = Double(NIODeadline.now().uptimeNanoseconds) / 1e9
        let verdict = Self.judge(
            stall, quarantine: library.quarantineList, restarts: previous?.restarts ?? [], paused: previous?.paused ?? false,
            now: now, stallQuarantine: stallQuarantine)
        logger.critical("\(reason); restarting the engine (connections, subscriptions and every answered call's state are kept)")
        if let file = verdict.quarantined {
            logger.error("quarantined \(file.macro.map { "macro \($0)" } ?? file.path): \(file.reason); \(file.remedy)")
            let name = file.macro ?? MacroLibrary.entryName(ofPath: file.path, directory: library.directory)
            host.history.audit.record(
                .quarantine, by: .daemon, name: name, after: host.history.versions.latest(of: name)?.hash,
                details: ["file": .string(file.path), "reason": .string(file.reason)])
        }
        if verdict.paused, !(previous?.paused ?? false) {
            logger.critical(
                "the engine stalled \(verdict.restarts.count) times within \(Int(Self.budgetWindow)) s in code no macro file answers for; JavaScript is paused after this restart (control, status and progress.get still answer); `macro resume` (engine.resume) runs it again"
            )
        }

        // The busy control stops first: what it read for the engine, and what it had not
        // written yet, go to the next process with the sockets.
        let halted = busyControl.locked { $0 }?.halt()
        let heldBytes = halted?.held ?? [:]
        let connections = hub.all
        // With `io_thread: engine` the connections live on the stuck loop itself: nothing runs
        // there any more, so their replies are written straight to their sockets below.
        let stuckLoop = host.engine.eventLoop
        let live = connections.filter { $0.channel.eventLoop !== stuckLoop }
        // 1. Read and accept nothing more: what clients send from now on waits in the sockets
        //    (and new clients in the backlog) for the next process.
        let servers = [listener.locked { $0 }, httpListener.locked { $0 }].compactMap { $0 }.filter { $0.eventLoop !== stuckLoop }
        wait(live.map { $0.channel.setOption(ChannelOptions.autoRead, value: false) } + servers.map { $0.setOption(ChannelOptions.autoRead, value: false) }, until: giveUp)
        let httpCookie = httpListener.locked { $0 }.flatMap { channel -> UInt64? in
            guard let provider = channel as? any SocketOptionProvider else { return nil }
            let cookie: EventLoopFuture<UInt64> = provider.unsafeGetSocketOption(level: SocketOptionLevel(SOL_SOCKET), name: SocketOptionName(SocketCookie.option))
            return try? cookie.wait()
        }
        // 2. Answer every request in flight, exactly once, or hand it to the next process.
        let names = Dictionary(host.engine.runningCalls.map { ($0.id, $0.macro) }, uniquingKeysWith: { a, _ in a })
        var replay: [Int: [UInt8]] = [:]
        var replayed = 0
        var direct: [Int: [UInt8]] = [:]
        // Every connection whose socket is still open, active or not: one the stuck loop set up
        // but never made active may have been served by the busy control, which holds what it
        // read for the engine (`heldBytes`).
        let open = SocketCookie.descriptorsByCookie()
        let handedOver = Set(
            connections.filter { connection in
                let cookie = connection.cookie.load(ordering: .relaxed)
                return cookie != 0 && connection.isSocket && open[cookie] != nil
            }.map(\.id))
        func handOver(_ request: RPCRequest, of connection: Connection?, route: ReplyRoute) -> Bool {
            guard let connection, handedOver.contains(connection.id) else { return false }
            let line = Array(Self.line(request).utf8)
            guard replayed + line.count <= Self.replayLimit else { return false }
            replayed += line.count
            replay[connection.id, default: []] += line
            keep(route)
            return true
        }
        for entry in host.inFlight.takeAll() {
            // An element of a JSON-RPC batch is answered in the batch's array (its elements answered
            // before are there already): the stuck one with its stop, the others -32006.
            if let slot = entry.batch {
                let stuck = entry.started.map { $0.isSet && !$0.isFinished } ?? false
                let message = entry.id.map { reply(to: entry.kind, id: $0, stall: stall, names: names, stuck: stuck) }
                // The element's own promise is answered in the array, never alone.
                keep(entry.route)
                guard let array = slot.batch.fill(slot.index, message) else { continue }
                if let connection = entry.connection, connection.channel.eventLoop === stuckLoop {
                    if let array {
                        direct[connection.id, default: []] += array.bytes
                        direct[connection.id, default: []].append(UInt8(ascii: "\n"))
                    }
                    unanswered.locked { $0.append(slot.batch.promise) }
                } else {
                    slot.batch.promise.succeed(array)
                }
                continue
            }
            // Never started, or finished with its reply held and its effects only in the
            // progress model: the next process runs it, as if it arrived there.
            if let request = entry.request, let started = entry.started,
                !started.isSet || (started.isFinished && RPCMethod(rawValue: request.method)?.replayableWhenFinished == true),
                handOver(request, of: entry.connection, route: entry.route)
            {
                continue
            }
            guard let id = entry.id else {
                if let connection = entry.connection, connection.channel.eventLoop === stuckLoop { keep(entry.route) } else { entry.route.deliver(nil) }
                continue
            }
            // A request other than a call that had started and not finished is the one the
            // engine is stuck in (`engine.eval`, a profile run): it ran past its budget.
            let stuck = entry.started.map { $0.isSet && !$0.isFinished } ?? false
            let message = reply(to: entry.kind, id: id, stall: stall, names: names, stuck: stuck)
            if let connection = entry.connection, connection.channel.eventLoop === stuckLoop {
                direct[connection.id, default: []] += message.bytes
                direct[connection.id, default: []].append(UInt8(ascii: "\n"))
                keep(entry.route)
            } else {
                entry.route.deliver(message)
            }
        }
        // Read while the restart began: the next process answers them too.
        for late in host.router.lateArrivals.locked({ list in
            defer { list.removeAll() }; return list
        }) {
            if handOver(late.request, of: late.connection, route: late.route) { continue }
            late.route.deliver(late.request.id.map { RPCCodec.response(id: $0, error: EngineHost.restartError) })
        }
        // 3. Flush: an empty write completes after everything written before it.
        wait(
            live.map { connection in
                connection.channel.eventLoop.flatSubmit {
                    connection.drained()
                }
            }, until: giveUp)
        // The run records go to the next process through their file, the stuck run's with it.
        if occupancy.call != 0, let macro = occupancy.owner?.macro {
            host.persistence.runs.abandoned(call: occupancy.call, macro: macro, reason: "stopped by the engine restart: \(reason)")
        }
        host.persistence.saveRuns()
        // 4. Hand over the sockets and what the next process must know.
        var handover = Handover()
        // Read again: a client that hung up since has its descriptor closed (its number perhaps reused).
        let descriptors = SocketCookie.descriptorsByCookie()
        let listenerCookie = listenerCookie.load(ordering: .relaxed)
        handover.listener = listenerCookie == 0 ? nil : descriptors[listenerCookie]
        handover.httpListener = httpCookie.flatMap { descriptors[$0] }
        for connection in connections where handedOver.contains(connection.id) {
            guard let fd = descriptors[connection.cookie.load(ordering: .relaxed)] else { continue }
            if let bytes = heldBytes[connection.id]?.output, !bytes.isEmpty { Self.writeAll(bytes, to: fd, until: giveUp) }
            if let bytes = direct[connection.id] { Self.writeAll(bytes, to: fd, until: giveUp) }
            let input = (replay[connection.id] ?? []) + connection.pendingInput.current + (heldBytes[connection.id]?.input ?? [])
            handover.clients.append(
                .init(
                    fd: fd, cookie: connection.cookie.load(ordering: .relaxed), subscriptions: connection.subscriptions.map(\.rawValue).sorted(),
                    pendingInput: input, pendingLength: input.count))
        }
        // Accepted by the busy control and not adopted yet: theirs too.
        for client in halted?.accepted ?? [] {
            // Once only, should its channel have joined the connections above (a restart never
            // finds the loop between the two: it is stuck in JavaScript).
            let cookie = SocketCookie.of(client.fd) ?? 0
            guard cookie == 0 || !handover.clients.contains(where: { $0.cookie == cookie }) else { continue }
            if !client.output.isEmpty { Self.writeAll(client.output, to: client.fd, until: giveUp) }
            handover.clients.append(
                .init(
                    fd: client.fd, cookie: cookie, subscriptions: [],
                    pendingInput: client.input, pendingLength: client.input.count))
        }
        // Accepted and never seen by a handler (on the stuck loop, in the wake-up that stalled):
        // new connections of the next process, which reads what their clients sent.
        if let listenerFD = handover.listener {
            let known = Set(handover.clients.compactMap(\.cookie) + [listenerCookie])
            for socket in SocketCookie.unadopted(descriptors, listener: listenerFD, known: known) {
                handover.clients.append(.init(fd: socket.fd, cookie: socket.cookie, subscriptions: []))
            }
        }
        handover.quarantine = verdict.quarantine
        handover.restarts = verdict.restarts
        handover.paused = verdict.paused
        handover.totalRestarts = (previous?.totalRestarts ?? 0) + 1
        handover.reason = reason
        handover.started = host.started
        handover.stalledAt = Date().timeIntervalSince1970
        // A SIGTERM or SIGINT that arrived but is still on its way to the shutdown (libdispatch
        // re-raises it at one thread, where it waits for its signalfd to be read; signals sent
        // to another thread do not survive the exec) is carried over too.
        handover.shuttingDown =
            shutdownRequested.load(ordering: .relaxed) || (previous?.shuttingDown ?? false) || Self.terminationSignalPending()
        let failure = handover.execute()
        logger.critical("cannot restart the engine: \(failure); exiting (70) for the service manager to restart macrod")
        exit(70)
    }

    /// Whether a SIGTERM or SIGINT waits, for the process or any of its threads
    /// (`/proc/self/status` ShdPnd, `/proc/self/task/*/status` SigPnd).
    static func terminationSignalPending() -> Bool {
        let wanted: UInt64 = (1 << (UInt64(SIGTERM) - 1)) | (1 << (UInt64(SIGINT) - 1))
        func pending(_ path: String, _ field: String) -> UInt64 {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8),
                let line = text.split(separator: "\n").first(where: { $0.hasPrefix(field + ":") })
            else { return 0 }
            return UInt64(line.dropFirst(field.count + 1).trimmingCharacters(in: .whitespaces), radix: 16) ?? 0
        }
        if pending("/proc/self/status", "ShdPnd") & wanted != 0 { return true }
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.contains { pending("/proc/self/task/\($0)/status", "SigPnd") & wanted != 0 }
    }

    /// Writes `bytes` to a (non-blocking) socket, waiting for room until `deadline` (and at most a second).
    static func writeAll(_ bytes: [UInt8], to fd: Int32, until deadline: NIODeadline) {
        var offset = 0
        let giveUp = min(deadline, NIODeadline.now() + .seconds(1))
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

    /// A reply answered by the next process, or written to the socket here: its promise, if it
    /// has one, is kept until `exec` (a reply routed to a connection needs nothing kept).
    private func keep(_ route: ReplyRoute) {
        if case .promise(let promise) = route { unanswered.locked { $0.append(promise) } }
    }

    /// A request as a protocol line again.
    static func line(_ request: RPCRequest) -> String {
        var text = #"{"jsonrpc":"2.0""#
        // The id as the client wrote it, so the next process echoes it byte for byte too.
        if let id = request.id { text += #","id":"# + id.json }
        text += #","method":"# + MacroValue.string(request.method).jsonText()
        if request.params != .undefined { text += #","params":"# + request.params.jsonText() }
        return text + "}\n"
    }

    private func reply(to kind: InFlightRequests.Kind, id: RPCID, stall: StallWatch.Stall, names: [Int: String], stuck: Bool) -> RPCMessage {
        switch kind {
        case .other where stuck && stall.occupancy.call == 0:
            let error = MacroError(
                code: .timeout,
                message:
                    "stopped: it kept the engine busy for \(stall.stuckMilliseconds) ms, past its time limit plus stall_grace_ms (an endless chain of promise jobs?); the engine was restarted"
            )
            return RPCCodec.response(id: id, error: RPCError(error))
        case .cancel(let call):
            return RPCCodec.response(id: id, result: ["call": .number(Double(call)), "cancelled": true])
        case .call(let call) where call == stall.occupancy.call || host.engine.isCancelRequested(call):
            let cancelled = host.engine.isCancelRequested(call) || (call == stall.occupancy.call && stall.cancelled)
            if let resident = stall.residentBytes, call == stall.occupancy.call, !cancelled {
                let error = MacroError(
                    code: .memoryLimit,
                    message:
                        "stopped: the process reached \(resident >> 20) MiB, 1.5 x memory_limit_mb, while this macro ran JavaScript the watchdog cannot reach (allocating in an endless chain of promise jobs?); the engine was restarted",
                    macro: names[call])
                return RPCCodec.response(id: id, error: RPCError(error))
            }
            let error =
                cancelled
                ? MacroError(code: .cancelled, message: "cancelled (the engine was restarted to stop it)", macro: names[call])
                : MacroError(
                    code: .timeout,
                    message:
                        "stopped: it kept the engine busy for \(stall.stuckMilliseconds) ms, past its time limit plus stall_grace_ms (an endless chain of promise jobs?); the engine was restarted",
                    macro: names[call])
            return RPCCodec.response(id: id, error: RPCError(error))
        case .call, .other:
            return RPCCodec.response(id: id, error: EngineHost.restartError)
        }
    }

    /// Waits for the futures until `deadline`, and at most one second (a client that does not
    /// read loses its last replies rather than hold the restart).
    private func wait<T: Sendable>(_ futures: [EventLoopFuture<T>], until deadline: NIODeadline) {
        let done = DispatchSemaphore(value: 0)
        let remaining = Atomic<Int>(futures.count)
        guard !futures.isEmpty else { return }
        for future in futures {
            future.whenComplete { _ in
                if remaining.subtract(1, ordering: .relaxed).newValue == 0 { done.signal() }
            }
        }
        let left = max(0, min(1_000_000_000, deadline.uptimeNanoseconds &- NIODeadline.now().uptimeNanoseconds))
        _ = done.wait(timeout: .now() + .nanoseconds(Int(left)))
    }
}
