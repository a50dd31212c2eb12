import Foundation
import Logging
import MacroEngineCore
import MacroRPC
import NIOCore
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// With the connections on the engine's own thread (`io_thread: engine`, the default: one
/// wake-up per call, as in Redis), nothing reads them while JavaScript keeps that thread busy.
/// Redis answers its clients from inside a busy script (`processEventsWhileBlocked`); macrod
/// does it from a thread of its own: once an entry into JavaScript has lasted
/// ``takeoverNanoseconds``, this thread takes the engine-thread connections over until the
/// entry ends. It reads what their clients send, answers the control lane at once
/// (`macro.running`, `macro.cancel`, `progress.get` of the committed values), keeps every other
/// byte for the engine, and writes, in order, both those answers and whatever the engine writes
/// meanwhile (a busy macro's console lines). When the entry ends (``reclaim()``, on the engine's
/// thread, before its loop reads again) the connections go back: the kept bytes are fed to each
/// pipeline ahead of anything read later (``BusyGate``), the unwritten output is written.
///
/// The hand-over is safe because the engine's loop does no I/O of its own while it runs
/// JavaScript, and the two sides never act at once: the takeover and every pass happen under
/// ``EngineOccupancy/whileEntry(_:_:)``, which the engine's end of the entry waits for.
final class BusyControl: Sendable {
    /// An entry must have lasted this long (one watchdog tick and more) before the takeover.
    static let takeoverNanoseconds: UInt64 = 20_000_000
    /// How often the thread looks while an entry runs or has just begun.
    static let tick: Duration = .milliseconds(5)
    /// How often it looks while no JavaScript runs: an idle macrod does not wake 200 times a
    /// second (a runaway that begins right after a look is taken over at most this much after
    /// it began, instead of the 20 ms of ``takeoverNanoseconds``).
    static let idleTick: Duration = .milliseconds(50)
    /// At most this much is read from one connection during one takeover (then its reading
    /// waits for the engine, as it would have without the takeover).
    static let stashLimit = 1 << 20
    /// At most this many clients are accepted during one takeover.
    static let acceptLimit = 64

    private let occupancy: EngineOccupancy
    private let engine: MacroEngine
    private let control: ControlLane
    private let publisher: ProgressPublisher
    private let logger: Logger
    private let links = Mutex<[Int: BusyLink]>([:])
    /// Clients accepted by the control thread during a takeover, handed to the engine's loop
    /// (``adopt``) when the entry ends.
    private let accepted = Mutex<[AcceptedClient]>([])
    /// Accepted clients handed to the loop and not adopted yet (a restart hands them over).
    private let adopting = Mutex<[AcceptedClient]>([])
    /// The users besides macrod's own that may connect (`allowed_uids`).
    private let allowedUIDs: [UInt32]
    /// The listening socket's cookie (0: not listening yet).
    private let listenerCookie: @Sendable () -> UInt64
    /// Gives an accepted client's socket to the engine's loop, with what was read for it and
    /// what it still has to be sent (set by the daemon once its pipeline is known).
    private let adopter = Mutex<CallbackBox<@Sendable (AcceptedClient) -> Void>?>(nil)
    /// The listening socket's descriptor during a takeover (-1: none).
    private let listenerFD = Atomic<Int32>(-1)
    /// The entry taken over (its ``EngineOccupancy/Snapshot/since``; 0: none).
    private let taken = Atomic<UInt64>(0)
    private let stopped = Atomic<Bool>(false)

    init(
        occupancy: EngineOccupancy, engine: MacroEngine, control: ControlLane, publisher: ProgressPublisher,
        allowedUIDs: [UInt32], listenerCookie: @escaping @Sendable () -> UInt64, logger: Logger
    ) {
        self.allowedUIDs = allowedUIDs
        self.listenerCookie = listenerCookie
        self.occupancy = occupancy
        self.engine = engine
        self.control = control
        self.publisher = publisher
        self.logger = logger
    }

    /// Starts the thread and the engine's hand-back at each entry's end.
    func start() {
        occupancy.observeEntryEnds { [self] in reclaim() }
        let thread = Thread { [self] in loop() }
        thread.name = "macrod-busy-control"
        thread.start()
    }

    /// How an accepted client joins the engine's loop (the daemon's pipeline).
    func setAdopter(_ adopt: @escaping @Sendable (AcceptedClient) -> Void) { adopter.locked { $0 = CallbackBox(adopt) } }

    /// A connection on the engine's loop joins (engine thread, when its pipeline is set up).
    func register(_ link: BusyLink) { links.locked { $0[link.connection.id] = link } }

    /// A connection left (engine thread).
    func unregister(_ id: Int) { _ = links.locked { $0.removeValue(forKey: id) } }

    private func loop() {
        var scratch = [UInt8](repeating: 0, count: 65_536)
        var pause = Self.idleTick
        while !stopped.load(ordering: .relaxed) {
            Thread.sleep(forTimeInterval: Double(pause.components.seconds) + Double(pause.components.attoseconds) / 1e18)
            let reading = occupancy.snapshot
            guard let since = reading.since else {
                pause = Self.idleTick
                continue
            }
            let age = EngineOccupancy.now() &- since
            guard age >= Self.takeoverNanoseconds else {
                // Look again when this entry would be old enough (not sooner than a tick).
                pause = max(Self.tick, .nanoseconds(Int64(Self.takeoverNanoseconds - age)))
                continue
            }
            pause = Self.tick
            _ = occupancy.whileEntry(since) {
                guard !stopped.load(ordering: .relaxed) else { return }
                let current = links.locked { Array($0.values) }
                if taken.load(ordering: .relaxed) != since {
                    takeOver(current)
                    taken.store(since, ordering: .relaxed)
                }
                findDescriptors(of: current)
                for link in current where link.isHeld { serve(link, scratch: &scratch) }
                acceptNew()
                for client in accepted.locked({ $0 }) { serve(client, scratch: &scratch) }
                closeVanished()
            }
        }
    }

    /// Holds every connection: from now on the engine's writes to them wait in their outboxes.
    private func takeOver(_ current: [BusyLink]) {
        var descriptors: [UInt64: Int32]?
        let cookie = listenerCookie()
        if cookie != 0 {
            descriptors = SocketCookie.descriptorsByCookie()
            listenerFD.store(descriptors?[cookie] ?? -1, ordering: .relaxed)
        }
        for link in current {
            // Hold first, then look at the flush flag (the gate sets it, then looks at the hold):
            // one of the two sees the other, so no socket is written by both.
            link.hold(true)
            let mayWrite = !link.flushing.load(ordering: .sequentiallyConsistent) && !link.halfWritten.load(ordering: .relaxed)
            let pendingEndsInsideALine = link.connection.pendingInput.endsInsideALine
            link.state.locked { state in
                state.reset(
                    continuingALine: state.handedBackInput.isEmpty ? pendingEndsInsideALine : state.handedBackInput.last != UInt8(ascii: "\n"),
                    mayWrite: mayWrite)
                // Output the last takeover handed back and the gate has not written yet (maybe the
                // rest of a line) goes first again.
                state.outbox = state.handedBackOutput
                state.handedBackOutput = []
                let cookie = link.connection.cookie.load(ordering: .relaxed)
                if state.fd < 0, cookie != 0 {
                    if descriptors == nil { descriptors = SocketCookie.descriptorsByCookie() }
                    state.fd = descriptors?[cookie] ?? -2
                }
            }
        }
    }

    /// Descriptors not known yet (a connection whose cookie came late), in one scan.
    private func findDescriptors(of current: [BusyLink]) {
        let missing = current.filter { link in
            link.isHeld && link.connection.cookie.load(ordering: .relaxed) != 0 && link.state.locked { $0.fd == -1 }
        }
        guard !missing.isEmpty else { return }
        let descriptors = SocketCookie.descriptorsByCookie()
        for link in missing {
            // -2: looked for and gone (not looked for again).
            let fd = descriptors[link.connection.cookie.load(ordering: .relaxed)] ?? -2
            link.state.locked { $0.fd = fd }
        }
    }

    /// Reads what the client sent, answers its control requests, writes what waits. The
    /// control lane is asked outside the link's lock (it takes the engine's own locks).
    private func serve(_ link: BusyLink, scratch: inout [UInt8]) {
        let connection = link.connection
        let requests = link.state.locked { state -> [(RPCRequest, RPCMethod)] in
            guard state.fd >= 0 else { return [] }
            state.read(scratch: &scratch)
            var requests: [(RPCRequest, RPCMethod)] = []
            for line in state.takeCompleteLines() {
                guard let (request, method) = Self.controlRequest(line) else {
                    state.keep(line)
                    continue
                }
                // As the control lane: committed values, when this connection has nothing on the
                // engine nor waiting for it (its own earlier requests are then seen).
                if method == .progressGet {
                    guard connection.engineRequests.load(ordering: .relaxed) == 0, state.kept.isEmpty, state.handedBackInput.isEmpty,
                        connection.pendingInput.current.isEmpty, case .undefined = request.params
                    else {
                        state.keep(line)
                        continue
                    }
                }
                requests.append((request, method))
            }
            return requests
        }
        var replies: [RPCMessage] = []
        var cancels: [(id: RPCID, call: Int, result: MacroValue)] = []
        for (request, method) in requests {
            if method == .progressGet {
                if let id = request.id { replies.append(RPCCodec.response(id: id, result: publisher.values(committed: true))) }
                continue
            }
            do {
                let result = try control.result(request, method)
                guard let id = request.id else { continue }
                if method == .cancel, let call = result["call"].intValue {
                    cancels.append((id, call, result))
                } else {
                    replies.append(RPCCodec.response(id: id, result: result))
                }
            } catch {
                if let id = request.id { replies.append(RPCCodec.response(id: id, error: RPCError(error, method: request.method, logger: logger))) }
            }
        }
        link.state.locked { state in
            for reply in replies { state.outbox += reply.bytes + [UInt8(ascii: "\n")] }
            if state.mayWrite { state.write() }
        }
        // A cancel answers once its call has stopped: through the control lane, whose reply
        // comes back on the engine's loop (after this entry), or from the restart.
        for cancel in cancels {
            control.replyWhenStopped(id: cancel.id, call: cancel.call, result: cancel.result, from: connection).whenSuccess { message in
                if let message { connection.send(message) }
            }
        }
    }

    /// New clients wait in the listener's backlog while the engine is busy: accept them, so a
    /// `macro running` or `macro cancel` started now is answered too (only users allowed to
    /// connect are served; the others are refused by the engine's loop afterwards, as always).
    private func acceptNew() {
        let listener = listenerFD.load(ordering: .relaxed)
        guard listener >= 0 else { return }
        // At most 64 clients wait here per takeover (then the backlog keeps the rest, as it
        // would without the takeover): a flood of connections costs bounded memory and fds.
        for _ in 0..<max(0, Self.acceptLimit - accepted.locked({ $0.count })) {
            // The listener is non-blocking (NIO's): nothing waiting is EAGAIN.
            let fd = accept(listener, nil, nil)
            guard fd >= 0 else { return }
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            var credentials = PeerCredentials()
            var length = socklen_t(MemoryLayout<PeerCredentials>.size)
            let known = getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) == 0
            let allowed = known && (credentials.uid == getuid() || allowedUIDs.contains(credentials.uid))
            let client = AcceptedClient(fd: fd, allowed: allowed)
            accepted.locked { $0.append(client) }
        }
    }

    /// A client accepted during the takeover that hung up without a request, or whose every
    /// request was answered here, costs nothing more: closed now rather than adopted.
    private func closeVanished() {
        let gone = accepted.locked { list -> [AcceptedClient] in
            let gone = list.filter { client in
                client.state.locked { $0.ended && $0.kept.isEmpty && $0.unread.isEmpty && $0.outbox.isEmpty && $0.repliesDue == 0 }
            }
            list.removeAll { client in gone.contains { $0 === client } }
            return gone
        }
        for client in gone { client.close() }
    }

    /// Serves a client accepted during the takeover (no pipeline yet: a cancel's reply goes to
    /// its outbox, or to its channel once it has one).
    private func serve(_ client: AcceptedClient, scratch: inout [UInt8]) {
        let requests = client.state.locked { state -> [(RPCRequest, RPCMethod)] in
            guard state.fd >= 0 else { return [] }
            state.read(scratch: &scratch)
            var requests: [(RPCRequest, RPCMethod)] = []
            for line in state.takeCompleteLines() {
                guard client.allowed, let (request, method) = Self.controlRequest(line),
                    method != .progressGet || (state.kept.isEmpty && request.params == .undefined)
                else {
                    state.keep(line)
                    continue
                }
                requests.append((request, method))
                if method == .cancel, request.id != nil { state.repliesDue += 1 }
            }
            return requests
        }
        var replies: [RPCMessage] = []
        for (request, method) in requests {
            do {
                if method == .progressGet {
                    if let id = request.id { replies.append(RPCCodec.response(id: id, result: publisher.values(committed: true))) }
                    continue
                }
                let result = try control.result(request, method)
                guard let id = request.id else { continue }
                if method == .cancel, let call = result["call"].intValue {
                    // Owed until the call stops; an engine restart that stops it sends it too.
                    let token = client.owe(RPCCodec.response(id: id, result: result))
                    engine.whenCallEnds(call) { client.deliverOwed(token) }
                } else {
                    replies.append(RPCCodec.response(id: id, result: result))
                }
            } catch {
                guard let id = request.id else { continue }
                if method == .cancel { client.state.locked { $0.repliesDue -= 1 } }
                replies.append(RPCCodec.response(id: id, error: RPCError(error, method: request.method, logger: logger)))
            }
        }
        client.state.locked { state in
            for reply in replies { state.outbox += reply.bytes + [UInt8(ascii: "\n")] }
            state.write()
        }
    }

    /// The request of `line` when it is a single control request.
    static func controlRequest(_ line: [UInt8]) -> (RPCRequest, RPCMethod)? {
        // Cheap first: the method's name must be in the line.
        guard Self.mentionsControl(line) else { return nil }
        guard case .single(.success(let request)) = RPCCodec.parse(line),
            let method = RPCMethod(rawValue: request.method), method.bypassesEngine || method == .progressGet
        else { return nil }
        return (request, method)
    }

    private static let names = [RPCMethod.running, .cancel, .progressGet].map { Array($0.rawValue.utf8) }

    private static func mentionsControl(_ line: [UInt8]) -> Bool {
        names.contains { name in
            guard line.count >= name.count else { return false }
            var i = 0
            while i + name.count <= line.count {
                if line[i] == name[0], line[i..<(i + name.count)].elementsEqual(name) { return true }
                i += 1
            }
            return false
        }
    }

    /// The engine's thread, right after an outermost entry ended (still inside it): the
    /// connections go back, their kept bytes and unwritten output move to where their gates take
    /// them first, and the pipeline work (feeding, writing, adopting accepted clients) runs as
    /// tasks of the loop afterwards, not inside the entry's end.
    func reclaim() {
        guard taken.load(ordering: .relaxed) != 0, !stopped.load(ordering: .relaxed) else { return }
        taken.store(0, ordering: .relaxed)
        listenerFD.store(-1, ordering: .relaxed)
        let clients = accepted.locked { list in
            defer { list.removeAll() }; return list
        }
        adopting.locked { $0 += clients }
        if !clients.isEmpty, let adopt = adopter.locked({ $0 }) {
            for client in clients {
                engine.eventLoop.execute { [self] in
                    // Not adopted if a restart took it meanwhile. It stays in `adopting` until
                    // its channel has it (``finishAdopting(_:)``): a stall before then hands it
                    // over with what was read for it.
                    if adopting.locked({ list in list.contains { $0 === client } }) { adopt.call(client) }
                }
            }
        }
        for link in links.locked({ Array($0.values) }) where link.isHeld {
            link.state.locked { state in
                link.hold(false)
                state.moveToHandBack()
            }
            engine.eventLoop.execute { link.handBackOnLoop() }
        }
    }

    /// The adopter's channel has `client` (or could not be made): it leaves the clients a
    /// restart hands over. False when a restart took it first (its socket is the next process's
    /// then: leave it open).
    func finishAdopting(_ client: AcceptedClient) -> Bool {
        adopting.locked { list in
            guard let index = list.firstIndex(where: { $0 === client }) else { return false }
            list.remove(at: index)
            return true
        }
    }

    /// Stops for good (an engine restart): returns, per connection id, the bytes read for the
    /// engine and those not yet written, for the next process.
    func halt() -> (held: [Int: (input: [UInt8], output: [UInt8])], accepted: [(fd: Int32, input: [UInt8], output: [UInt8])]) {
        occupancy.withGate {
            stopped.store(true, ordering: .relaxed)
            taken.store(0, ordering: .relaxed)
        }
        var left: [Int: (input: [UInt8], output: [UInt8])] = [:]
        for link in links.locked({ Array($0.values) }) {
            let bytes = link.state.locked { $0.takeAll() }
            if !bytes.input.isEmpty || !bytes.output.isEmpty { left[link.connection.id] = bytes }
        }
        let clients =
            accepted.locked { list in
                defer { list.removeAll() }; return list
            }
            + adopting.locked { list in
                defer { list.removeAll() }; return list
            }
        return (
            left,
            clients.map { client in
                // The restart stops the calls they cancelled: their owed replies go with the output.
                let (input, output) = client.state.locked { state in
                    let owed = state.owed.flatMap(\.bytes)
                    state.owed = []
                    let (input, output) = state.takeAll()
                    return (input, output + owed)
                }
                return (client.fd, input, output)
            }
        )
    }

    /// Stops the thread (macrod shuts down).
    func stop() { occupancy.withGate { stopped.store(true, ordering: .relaxed) } }
}

/// One connection on the engine's loop, as ``BusyControl`` and its ``BusyGate`` share it.
final class BusyLink: Sendable {
    let connection: Connection
    private let held = Atomic<Bool>(false)
    /// Set by the gate around each flush (see ``BusyGate``).
    let flushing = Atomic<Bool>(false)
    /// The channel's last flush left bytes the kernel did not take, and NIO has not written them
    /// yet: a line may be half written, so the control thread must not write to this socket.
    let halfWritten = Atomic<Bool>(false)
    /// The gate's own state (the engine's loop only).
    private let gate: NIOLoopBound<BusyGate>
    let state = Mutex<BusyState>(BusyState())

    init(connection: Connection, gate: NIOLoopBound<BusyGate>) {
        self.connection = connection
        self.gate = gate
    }

    var isHeld: Bool { held.load(ordering: .sequentiallyConsistent) }
    func hold(_ value: Bool) { held.store(value, ordering: .sequentiallyConsistent) }

    /// On the engine's loop, in a task after the entry: the gate feeds and writes what waits.
    func handBackOnLoop() { gate.value.handBack() }
}

/// A client the control thread accepted while the engine was busy.
final class AcceptedClient: Sendable {
    let fd: Int32
    /// Its user may connect (SO_PEERCRED): only then are its control requests answered early.
    let allowed: Bool
    let state: Mutex<BusyState>
    /// Its channel once the engine's loop adopted it.
    let channel = Mutex<(any Channel)?>(nil)

    init(fd: Int32, allowed: Bool) {
        self.fd = fd
        self.allowed = allowed
        var state = BusyState()
        state.fd = fd
        state.mayWrite = true
        self.state = Mutex(state)
    }

    /// Keeps `message`, a reply owed later (a cancel's, once its call stopped; one counted in
    /// ``BusyState/repliesDue``), until ``deliverOwed(_:)``, or until an engine restart (which
    /// stops the call) hands it over with the client's output.
    func owe(_ message: RPCMessage) -> Int {
        state.locked { state in
            state.nextOwed += 1
            state.owed.append((state.nextOwed, message.bytes + [UInt8(ascii: "\n")]))
            return state.nextOwed
        }
    }

    /// Sends the reply kept under `token`: through its channel when it has one, else written with
    /// what waits; dropped once the client is gone (its descriptor is never written after close).
    func deliverOwed(_ token: Int) {
        state.locked { state in
            guard let index = state.owed.firstIndex(where: { $0.token == token }) else { return }
            let bytes = state.owed.remove(at: index).bytes
            state.repliesDue -= 1
            if let channel = channel.locked({ $0 }) {
                var buffer = channel.allocator.buffer(capacity: bytes.count)
                buffer.writeBytes(bytes)
                channel.writeAndFlush(ConnectionOutput.bytes(buffer), promise: nil)
                return
            }
            guard state.fd >= 0 else { return }
            state.outbox += bytes
            state.write()
        }
    }

    /// The engine's loop adopted it as `channel`: what was read for it and what it still has
    /// to be sent, in order; later replies go to `channel`.
    func adopted(by channel: any Channel) -> (input: [UInt8], output: [UInt8]) {
        state.locked { state in
            self.channel.locked { $0 = channel }
            state.fd = -1
            return state.takeAll()
        }
    }

    /// Closes its socket (it hung up, or could not be adopted); nothing is written to the
    /// descriptor afterwards, whatever number it gets next.
    func close() {
        state.locked { state in
            guard state.fd >= 0 else { return }
            _ = Glibc.close(state.fd)
            state.fd = -1
        }
    }
}

/// What the takeover has of one connection.
struct BusyState: Sendable {
    /// The socket's descriptor (found once by its cookie; -1: not looked for or closed, -2: not
    /// found).
    var fd: Int32 = -1
    /// Bytes read, not yet cut into lines.
    var unread: [UInt8] = []
    /// Lines (and the unfinished rest) for the engine, in order.
    var kept: [UInt8] = []
    /// Bytes to write, in order.
    var outbox: [UInt8] = []
    /// Handed back by the last takeover, not yet taken by the gate: input ahead of anything
    /// the channel reads, output ahead of anything the engine writes.
    var handedBackInput: [UInt8] = []
    var handedBackOutput: [UInt8] = []
    /// The first line read continues one the engine already holds the start of.
    var continuing = false
    var ended = false
    /// The control thread may write during this takeover (nothing was half written).
    var mayWrite = false
    /// Replies owed to an accepted client that come later (cancels waiting for their call).
    var repliesDue = 0
    /// The replies owed to an accepted client (``AcceptedClient/owe(_:)``), in order.
    var owed: [(token: Int, bytes: [UInt8])] = []
    var nextOwed = 0

    mutating func reset(continuingALine: Bool, mayWrite: Bool) {
        unread = []
        kept = []
        outbox = []
        continuing = continuingALine
        ended = false
        self.mayWrite = mayWrite
    }

    /// Reads what the socket has, without blocking, up to the stash limit.
    mutating func read(scratch: inout [UInt8]) {
        guard !ended, fd >= 0 else { return }
        while unread.count + kept.count < BusyControl.stashLimit {
            let n = scratch.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if n > 0 {
                unread += scratch[..<n]
                continue
            }
            if n < 0 && errno == EINTR { continue }
            // 0: the client closed its side; the engine's own read will see it too.
            if n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK) { ended = true }
            return
        }
    }

    /// The complete lines read so far (without their newline), leaving the unfinished rest;
    /// a line that continues the engine's own is kept for it, unlooked at.
    mutating func takeCompleteLines() -> [[UInt8]] {
        var lines: [[UInt8]] = []
        var start = 0
        while let newline = unread[start...].firstIndex(of: UInt8(ascii: "\n")) {
            let line = Array(unread[start..<newline])
            start = newline + 1
            if continuing {
                continuing = false
                kept += line + [UInt8(ascii: "\n")]
            } else {
                lines.append(line)
            }
        }
        unread.removeFirst(start)
        return lines
    }

    /// A line that is the engine's to answer.
    mutating func keep(_ line: [UInt8]) { kept += line + [UInt8(ascii: "\n")] }

    /// Writes the outbox, without blocking; what the socket does not take waits.
    mutating func write() {
        guard fd >= 0 else { return }
        while !outbox.isEmpty {
            let n = outbox.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL)) }
            if n > 0 {
                outbox.removeFirst(n)
                continue
            }
            if n < 0 && errno == EINTR { continue }
            return
        }
    }

    /// The end of a takeover: what was read and not written moves behind what was handed back
    /// before (the gate has not taken everything yet when takeovers follow each other closely).
    mutating func moveToHandBack() {
        handedBackInput += kept + unread
        handedBackOutput += outbox
        reset(continuingALine: false, mayWrite: false)
    }

    /// The gate takes the input handed back (nil: none).
    mutating func takeHandedBackInput() -> [UInt8]? {
        guard !handedBackInput.isEmpty else { return nil }
        defer { handedBackInput = [] }
        return handedBackInput
    }

    /// The gate takes the output handed back (nil: none).
    mutating func takeHandedBackOutput() -> [UInt8]? {
        guard !handedBackOutput.isEmpty else { return nil }
        defer { handedBackOutput = [] }
        return handedBackOutput
    }

    /// Everything, for a restart or an adoption: the input in order, the output not written.
    mutating func takeAll() -> (input: [UInt8], output: [UInt8]) {
        defer {
            handedBackInput = []
            handedBackOutput = []
            reset(continuingALine: false, mayWrite: false)
        }
        return (handedBackInput + kept + unread, handedBackOutput + outbox)
    }
}
