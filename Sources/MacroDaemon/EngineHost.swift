import Foundation
import Logging
import MacroEngineCore
import MacroRPC
import NIOCore
import Synchronization

/// Runs every method on the engine's loop, one at a time in arrival order, and publishes what
/// changed: one `progress.changed` per request that changed the model (coalesced over the
/// request's turn, `seq` +1 each), and the library's `macro.*` events.
final class EngineHost: Sendable {
    let engine: MacroEngine
    let model: ProgressModel
    let library: MacroLibrary
    let store: StateStore
    /// Where each changing turn's values go before its replies (folded into `store` over time).
    let journal: StateJournal
    let hub: NotificationHub
    let logger: Logger
    let version: String
    private let settings: Mutex<Settings>
    private let started = ContinuousClock.now
    private let queued = Atomic<Int>(0)
    private let modelChanges = Atomic<Int>(0)
    private let publishedChanges = Atomic<Int>(0)
    private let counters = Mutex<Counters>(Counters())
    private let consoleRoutes = ConsoleRoutes()
    /// The Prometheus metrics `GET /metrics` renders.
    let metrics = EngineMetrics()
    /// The per-macro statistics (`macro.stats`), confined to the engine's loop.
    let statistics: NIOLoopBoundBox<StatisticsTable>
    /// The current batch's held replies and journal append, confined to the engine's loop.
    private let groupCommit: NIOLoopBoundBox<GroupCommit>

    struct Settings: Sendable {
        var engineEval: Bool
        var queueLimit: Int
        var socket: String
        var fsync: FsyncPolicy = .interval
        /// The mode of a file `macro.save` creates: 0666 less the umask macrod started with.
        var newFileMode: mode_t = 0o644
        /// The dashboard's URL with its token (nil: no dashboard).
        var dashboard: String?
    }

    private struct Counters {
        var calls = 0
        var errors = 0
        var seq = 0
        var stateError: String?
    }

    init(engine: MacroEngine, model: ProgressModel, library: MacroLibrary, store: StateStore, hub: NotificationHub,
         settings: Settings, version: String, logger: Logger) {
        self.engine = engine
        self.model = model
        self.library = library
        self.store = store
        self.journal = StateJournal(store: store)
        self.hub = hub
        self.logger = logger
        self.version = version
        self.settings = Mutex(settings)
        let statistics = NIOLoopBoundBox.makeBoxSendingValue(StatisticsTable(metrics: metrics), as: StatisticsTable.self, eventLoop: engine.eventLoop)
        self.statistics = statistics
        groupCommit = NIOLoopBoundBox.makeBoxSendingValue(GroupCommit(), as: GroupCommit.self, eventLoop: engine.eventLoop)
        model.addObserver { [weak self] _ in self?.modelChanges.add(1, ordering: .relaxed) }
        // console.* still goes to the log; a macro.call's own output also goes to its caller.
        engine.consoleHandler = { [consoleRoutes, logger] message in
            // With the call's id, so a log shipper can group a call's lines.
            var metadata: Logger.Metadata = [:]
            if let macro = message.macro { metadata["macro"] = "\(macro)" }
            if let call = message.call { metadata["call"] = "\(call)" }
            logger.log(level: message.level, "\(message.message)", metadata: metadata)
            consoleRoutes.forward(message)
        }
        // Every synchronous run of JavaScript is a turn: an animation step publishes its own change.
        engine.onTurnEnd { [weak self] in
            guard let self else { return }
            publishIfChanged()
            let entry = engine.occupancy.takeLastEntry()
            statistics.value.turnEnded(call: entry.call, nanoseconds: entry.nanoseconds)
        }
        let loop = engine.eventLoop
        let record = { @Sendable (body: @escaping @Sendable (StatisticsTable) -> Void) in
            if loop.inEventLoop { body(statistics.value) } else { loop.execute { body(statistics.value) } }
        }
        library.onChange { [hub] change in
            switch change {
            case .loaded(let name, let version):
                record { $0.loaded(name, version: version) }
                hub.publish(.macros, "macro.loaded", ["name": .string(name), "version": .number(Double(version))])
            case .failed(let name, let error):
                record { $0.failed(name) }
                var params: OrderedFields = ["name": .string(name), "file": .string(error.file ?? "")]
                params["line"] = error.line.map { .number(Double($0)) } ?? .null
                params["column"] = error.column.map { .number(Double($0)) } ?? .null
                params["message"] = .string(error.headline)
                hub.publish(.macros, "macro.failed", .object(params))
            case .removed(let name):
                hub.publish(.macros, "macro.removed", ["name": .string(name)])
            }
        }
    }

    func update(_ body: (inout Settings) -> Void) { settings.locked { body(&$0) } }

    /// Requests waiting for or running on the engine.
    var pending: Int { queued.load(ordering: .relaxed) }

    /// Requests on the engine (or waiting for a call to stop), answerable by a restart.
    let inFlight = InFlightRequests()
    /// Set once the engine is being restarted: new requests are answered -32006 at once.
    let restarting = Atomic<Bool>(false)

    /// Handles one request (see ``handle(_:from:)-([RPCRequest],_)``).
    func handle(_ request: RPCRequest, from connection: Connection) -> EventLoopFuture<RPCMessage?> {
        var jobs: [@Sendable () -> Void] = []
        let reply = admit(request, from: connection, jobs: &jobs)
        submit(jobs)
        return reply
    }

    /// Handles the requests of one read, in order: control methods are answered here, off the
    /// engine's thread; the others run on the engine's loop as one batch (one hand-over, one
    /// journal append, see ``GroupCommit``). Answers -32005 at once when the queue is full. The
    /// method is looked up first: an unknown one is -32601 whatever its params. The returned
    /// futures (one per request) complete on the connection's loop.
    func handle(_ requests: [RPCRequest], from connection: Connection) -> [EventLoopFuture<RPCMessage?>] {
        var jobs: [@Sendable () -> Void] = []
        let replies = requests.map { admit($0, from: connection, jobs: &jobs) }
        submit(jobs)
        return replies
    }

    /// Runs `jobs` on the engine's loop as one batch: inline when already there (io_thread: engine).
    private func submit(_ jobs: [@Sendable () -> Void]) {
        guard !jobs.isEmpty else { return }
        let loop = engine.eventLoop
        if loop.inEventLoop {
            runBatch(jobs)
        } else {
            loop.execute { [self] in runBatch(jobs) }
        }
    }

    /// One batch on the engine's loop: the jobs in order, then the group commit.
    private func runBatch(_ jobs: [@Sendable () -> Void]) {
        groupCommit.value.run({
            for job in jobs { job() }
        }, commit: { changed in
            if changed { appendJournal() }
        }, publish: { [hub] params in
            hub.publish(.progress, "progress.changed", params)
        })
    }

    /// Admits one request: its reply, answered at once or by an engine job appended to `jobs`.
    private func admit(_ request: RPCRequest, from connection: Connection, jobs: inout [@Sendable () -> Void]) -> EventLoopFuture<RPCMessage?> {
        let replyLoop = connection.channel.eventLoop
        guard let method = RPCMethod(rawValue: request.method) else {
            if request.id != nil { countError() }
            let error = RPCError(code: RPCError.methodNotFound, message: "Method not found: \(request.method)")
            return replyLoop.makeSucceededFuture(request.id.map { RPCCodec.response(id: $0, error: error) })
        }
        if restarting.load(ordering: .relaxed) {
            countError()
            return replyLoop.makeSucceededFuture(request.id.map { RPCCodec.response(id: $0, error: Self.restartError) })
        }
        // The committed values, answered here while this connection waits for nothing else on the
        // engine (so its own earlier requests are seen): no turn in progress is ever shown.
        if method == .progressGet, connection.engineRequests.load(ordering: .relaxed) == 0,
           case .undefined = request.params {
            return replyLoop.makeSucceededFuture(request.id.map { RPCCodec.response(id: $0, result: progressJSON(committed: true)) })
        }
        // Answered here, off the engine's thread: they must work while a macro keeps it busy.
        if method.bypassesEngine {
            guard let id = request.id else {
                _ = try? control(request, method)
                return replyLoop.makeSucceededFuture(nil)
            }
            do {
                let result = try control(request, method)
                guard method == .cancel, let call = result["call"].intValue else {
                    return replyLoop.makeSucceededFuture(RPCCodec.response(id: id, result: result))
                }
                // cancelled: true only once the call has actually stopped.
                let promise = replyLoop.makePromise(of: RPCMessage?.self)
                let token = inFlight.add(.init(id: id, kind: .cancel(call), promise: promise, connection: connection))
                engine.whenCallEnds(call) { [inFlight] in
                    inFlight.take(token)?.promise.succeed(RPCCodec.response(id: id, result: result))
                }
                return promise.futureResult
            } catch {
                countError()
                return replyLoop.makeSucceededFuture(RPCCodec.response(id: id, error: rpcError(error, method: request.method)))
            }
        }
        let limit = settings.locked { $0.queueLimit }
        if queued.add(1, ordering: .relaxed).newValue > limit {
            queued.subtract(1, ordering: .relaxed)
            countError()
            let reply = request.id.map { RPCCodec.response(id: $0, error: RPCError(code: RPCError.busy, message: "busy: \(limit) request\(limit == 1 ? " is" : "s are") already waiting; try again")) }
            return replyLoop.makeSucceededFuture(reply)
        }
        let loop = engine.eventLoop
        let callID = method == .call ? engine.reserveCallID() : nil
        let promise = replyLoop.makePromise(of: RPCMessage?.self)
        let started = InFlightRequests.StartFlag()
        let token = inFlight.add(.init(
            id: request.id, kind: callID.map { .call($0) } ?? .other, promise: promise,
            request: request, connection: connection, started: started))
        connection.engineRequests.add(1, ordering: .relaxed)
        let run = { @Sendable [self] () -> EventLoopFuture<MacroValue> in
            started.set()
            do {
                let params = try Params(request, method: method)
                if method == .call { return try callAsync(params, callID: callID, id: request.id, connection: connection) }
                if method == .profile { return try profileAsync(params) }
                return loop.makeSucceededFuture(try dispatch(method, params, connection))
            } catch {
                return loop.makeFailedFuture(error)
            }
        }
        jobs.append { [self] in
            run().map { Result<MacroValue, any Error>.success($0) }
            .recover { .failure($0) }
            .whenSuccess { [self] outcome in
                queued.subtract(1, ordering: .relaxed)
                connection.engineRequests.subtract(1, ordering: .relaxed)
                publishIfChanged()
                let deliver = { [self] in
                    // A restart may have answered it already (a reply held for its batch's commit
                    // included: its change was not journaled, so -32006 "nothing was kept" holds).
                    guard let entry = inFlight.take(token) else { return }
                    guard let id = request.id else { return entry.promise.succeed(nil) }
                    switch outcome {
                    case .success(let result): entry.promise.succeed(RPCCodec.response(id: id, result: result))
                    case .failure(let error):
                        countError()
                        entry.promise.succeed(RPCCodec.response(id: id, error: rpcError(error, method: request.method)))
                    }
                }
                let commit = groupCommit.value
                if commit.isOpen { commit.hold(deliver) } else { deliver() }
            }
        }
        return promise.futureResult
    }

    /// The error of a request the engine restart overtook.
    static let restartError = RPCError(
        code: RPCError.engineRestarted,
        message: "engine restarted: a macro kept the engine busy past its deadline and stall_grace_ms; this request did not complete and nothing of it was kept; send it again")

    /// `macro.running` and `macro.cancel {call}`.
    private func control(_ request: RPCRequest, _ method: RPCMethod) throws -> MacroValue {
        let params = try Params(request, method: method)
        if method == .running {
            return .array(engine.runningCalls.map { call in
                ["call": .number(Double(call.id)), "name": .string(call.macro), "elapsedMs": .number(Double(call.elapsedMilliseconds))]
            })
        }
        guard let id = params.value["call"].intValue else {
            throw RPCError(code: RPCError.invalidParams, message: "Invalid params: call must be a call id from macro.running")
        }
        guard engine.cancel(call: id) else {
            throw RPCError(code: RPCError.invalidParams, message: "Invalid params: no call \(id) is running")
        }
        return ["call": .number(Double(id)), "cancelled": true]
    }

    func rpcError(_ error: any Error, method: String) -> RPCError {
        switch error {
        case let error as RPCError: return error
        case let error as MacroError: return RPCError(error)
        default:
            logger.error("internal error in \(method): \(error)")
            return RPCError(code: RPCError.internalError, message: "internal error: \(error)")
        }
    }

    /// Publishes the model's change, once, if anything changed since the last publication.
    private func publishIfChanged() {
        let current = modelChanges.load(ordering: .relaxed)
        guard publishedChanges.exchange(current, ordering: .relaxed) != current else { return }
        modelChanged()
    }

    /// After a turn that changed the model: save the state (before the reply leaves), then
    /// publish one notification. Inside a batch both wait for its commit (``GroupCommit``).
    /// On the engine's loop.
    private func modelChanged() {
        let seq = counters.locked { counters -> Int in
            counters.seq += 1
            return counters.seq
        }
        var notification: MacroValue?
        if hub.hasSubscribers(.progress) {
            var params = progressJSON()
            if case .object(var fields) = params {
                fields["seq"] = .number(Double(seq))
                params = .object(fields)
            }
            notification = params
        }
        let commit = groupCommit.value
        if commit.isOpen {
            commit.modelChanged(notification: notification)
            return
        }
        appendJournal()
        if let notification { hub.publish(.progress, "progress.changed", notification) }
    }

    /// Appends the model's values to the journal (before any reply of the change leaves); fsync
    /// per the policy.
    private func appendJournal() {
        let values = model.valuesByName
        let policy = settings.locked { $0.fsync }
        do {
            try journal.append(values, durable: policy == .always)
            counters.locked { $0.stateError = nil }
        } catch {
            let first = counters.locked { counters -> Bool in
                defer { counters.stateError = "\(error)" }
                return counters.stateError == nil
            }
            if first { logger.error("cannot save the state: \(error)") }
        }
    }

    func countError() { counters.locked { $0.errors += 1 } }

    /// For the `interval` policy: fsyncs the state if a change was written since the last sync.
    func syncIfNeeded() {
        do {
            try journal.sync()
        } catch {
            logger.debug("periodic state sync failed: \(error)")
        }
    }

    func progressJSON(committed: Bool = false) -> MacroValue {
        var fields = OrderedFields()
        for (channel, value) in committed ? model.committedValues : model.values { fields[channel] = .number(value) }
        return .object(fields)
    }

    // MARK: Methods

    private func dispatch(_ method: RPCMethod, _ params: Params, _ connection: Connection) throws -> MacroValue {
        switch method {
        case .list: return .array(library.entries.map { Self.entryJSON($0, kind: "macro") } + library.libEntries.map { Self.entryJSON($0, kind: "lib") })
        case .source:
            let name = try params.macroName()
            return ["name": .string(name), "source": .string(try library.source(of: name))]
        case .save: return try save(params)
        case .delete: return try delete(params)
        case .types:
            let names = library.entries.filter { $0.version > 0 }.map(\.name)
            return ["source": .string(try engine.typeDeclarations(channels: model.channels, macros: names))]
        case .progressGet: return progressJSON()
        case .progressSet: return try setProgress(params)
        case .subscribe:
            let subscribed = connection.subscribe(try params.events())
            return ["events": .array(EventKind.allCases.filter(subscribed.contains).map { .string($0.rawValue) })]
        case .unsubscribe:
            let subscribed = connection.unsubscribe(try params.events())
            return ["events": .array(EventKind.allCases.filter(subscribed.contains).map { .string($0.rawValue) })]
        case .status: return status()
        case .stats: return try stats(params)
        case .logRecent:
            let limit = params.value["limit"] == .undefined ? NotificationHub.recentLimit : params.value["limit"].intValue ?? -1
            guard limit >= 0 else { throw params.invalid("limit", "must be a whole number >= 0") }
            return .array(hub.recentLogs(limit: limit))
        case .eval:
            guard settings.locked({ $0.engineEval }) else {
                throw RPCError(code: RPCError.forbidden, message: "engine.eval is disabled; set engine_eval: true in the config (development only)")
            }
            let source = try params.string("source")
            return try engine.evaluate(source, file: "<eval>", timeLimit: try params.timeLimit())
        case .call, .running, .cancel, .profile:
            throw RPCError(code: RPCError.internalError, message: "internal error: \(method.rawValue) is not dispatched here")
        }
    }

    /// Starts `macro.call` as call `callID`. With an id, the call's console output goes to
    /// `connection` as `macro.console` notifications while it is pending (see ``ConsoleRoutes``).
    private func callAsync(_ params: Params, callID: Int?, id: RPCID?, connection: Connection) throws -> EventLoopFuture<MacroValue> {
        let name = try params.macroName(in: engine)
        let arguments = try params.array("args") ?? []
        let deadline = try params.timeLimit()
        counters.locked { $0.calls += 1 }
        // Statistics: registered before the call's first turn (its time in JavaScript), counted
        // where it settles, on the engine's loop.
        let statistics = statistics
        let start = NIODeadline.now().uptimeNanoseconds
        statistics.value.started(callID ?? 0, macro: name)
        let future: EventLoopFuture<MacroValue>
        if let id, let callID {
            future = consoleRoutes.routing(call: callID, to: connection, id: id) {
                library.callFuture(name, arguments: arguments, deadline: deadline, callID: callID)
            }
        } else {
            future = library.callFuture(name, arguments: arguments, deadline: deadline, callID: callID)
        }
        future.hop(to: engine.eventLoop).whenComplete { result in
            let elapsed = NIODeadline.now().uptimeNanoseconds &- start
            if case .failure(let error) = result {
                statistics.value.finished(callID ?? 0, macro: name, nanoseconds: elapsed, failure: error)
            } else {
                statistics.value.finished(callID ?? 0, macro: name, nanoseconds: elapsed, failure: nil)
            }
        }
        return future
    }

    /// `macro.profile {name, args?, runs?, timeoutMs?}`: runs the macro `runs` times (default 10)
    /// one after the other under JavaScriptCore's sampling profiler (``MacroLibrary/profile(_:arguments:runs:deadline:)``);
    /// answers `{name, runs, samples, folded, macrosDir}`. A run that fails fails the profile with its error.
    private func profileAsync(_ params: Params) throws -> EventLoopFuture<MacroValue> {
        let name = try params.macroName(in: engine)
        let arguments = try params.array("args") ?? []
        let deadline = try params.timeLimit()
        let runs: Int
        switch params.value["runs"] {
        case .undefined: runs = 10
        case .number(let n) where n.rounded() == n && n >= 1 && n <= Double(MacroLibrary.maximumProfileRuns): runs = Int(n)
        default: throw params.invalid("runs", "must be a whole number from 1 to \(MacroLibrary.maximumProfileRuns)")
        }
        guard library.entry(named: name)?.version ?? 0 > 0 else {
            throw RPCError(code: RPCError.noSuchMacro, message: "no macro named '\(name)'")
        }
        return library.profile(name, arguments: arguments, runs: runs, deadline: deadline).map(\.json)
    }

    /// `macro.stats {name?, reset?}`: every macro's statistics by name (or `name`'s), as they
    /// were before a reset.
    private func stats(_ params: Params) throws -> MacroValue {
        let name: String? = params.value["name"] == .undefined ? nil : try params.macroName()
        let reset: Bool
        switch params.value["reset"] {
        case .undefined: reset = false
        case .bool(let value): reset = value
        default: throw params.invalid("reset", "must be true or false")
        }
        let table = statistics.value
        let names: [String]
        if let name {
            guard library.entry(named: name) != nil || table.names.contains(name) else {
                throw RPCError(code: RPCError.noSuchMacro, message: "no macro named '\(name)'")
            }
            names = [name]
        } else {
            names = Set(library.entries.map(\.name) + table.names).sorted()
        }
        let result = MacroValue.array(names.map(table.json))
        if reset { table.reset(name) }
        return result
    }

    /// The Prometheus metrics as text, the gauges read first. The heap size is read on the
    /// engine's loop; when a macro keeps it busy past `waitForHeap`, the last reading is shown.
    func metricsText(on loop: any EventLoop, waitForHeap: TimeAmount = .milliseconds(500)) -> EventLoopFuture<[UInt8]> {
        metrics.connections.set(Double(hub.count))
        metrics.queueDepth.set(Double(pending))
        let promise = loop.makePromise(of: [UInt8].self)
        let once = ScrapeOnce()
        let metrics = metrics
        let timeout = loop.scheduleTask(in: waitForHeap) {
            if once.claim() { promise.succeed(metrics.render()) }
        }
        engine.heapBytes().whenComplete { result in
            if case .success(let bytes) = result { metrics.heapBytes.set(Double(bytes)) }
            if once.claim() {
                timeout.cancel()
                promise.succeed(metrics.render())
            }
        }
        return promise.futureResult
    }

    private func save(_ params: Params) throws -> MacroValue {
        let name = try params.macroName(in: engine)
        let source = try params.string("source")
        let path = "\(library.directory)/\(name).js"
        try engine.checkMacro(javascript: source, key: name, file: path)
        do {
            // An existing file keeps its mode; a new one gets what the user's umask gives.
            let mode = FileMode.existing(path) ?? settings.locked { $0.newFileMode }
            try AtomicFile.write(Data(source.utf8), to: path, mode: mode, exactMode: true)
        } catch let error as MacroError {
            throw RPCError(code: RPCError.internalError, message: error.message)
        }
        let entry = library.load(file: path)
        return ["name": .string(name), "file": .string(path), "version": .number(Double(entry.version))]
    }

    private func delete(_ params: Params) throws -> MacroValue {
        let name = try params.macroName()
        let path = "\(library.directory)/\(name).js"
        guard FileManager.default.fileExists(atPath: path) || library.entry(named: name) != nil else {
            throw RPCError(code: RPCError.noSuchMacro, message: "no macro named '\(name)'")
        }
        if unlink(path) != 0 && errno != ENOENT {
            throw RPCError(code: RPCError.internalError, message: "cannot delete \(path): \(String(cString: strerror(errno)))")
        }
        library.remove(name)
        return ["name": .string(name)]
    }

    private func setProgress(_ params: Params) throws -> MacroValue {
        guard case .object(let fields) = params.value else {
            throw RPCError(code: RPCError.invalidParams, message: "Invalid params: progress.set takes an object such as {\"inner\": 5}")
        }
        let channels = model.channels.map(\.name)
        var updates: [(String, Double)] = []
        for (key, value) in fields {
            guard channels.contains(key) else {
                throw RPCError(code: RPCError.invalidParams, message: "Invalid params: unknown channel '\(key)' (channels: \(channels.joined(separator: ", ")))")
            }
            guard case .number(let number) = value, number.isFinite else {
                throw RPCError(code: RPCError.invalidParams, message: "Invalid params: '\(key)' must be a finite number")
            }
            updates.append((key, number))
        }
        for (channel, value) in updates { try model.set(channel, to: value) }
        return progressJSON()
    }

    private func status() -> MacroValue {
        let entries = library.entries
        let libEntries = library.libEntries
        let (calls, errors, seq, stateError) = counters.locked { ($0.calls, $0.errors, $0.seq, $0.stateError) }
        let uptime = ContinuousClock.now - started
        var fields: OrderedFields = [
            "version": .string(version),
            "pid": .number(Double(getpid())),
            "uptime": .number(((Double(uptime.components.seconds) + Double(uptime.components.attoseconds) / 1e18) * 1000).rounded() / 1000),
            "socket": .string(settings.locked { $0.socket }),
            "macrosDir": .string(library.directory),
            "macros": ["ok": .number(Double(entries.filter { $0.status == .ok }.count)), "broken": .number(Double(entries.filter { $0.status == .error }.count))],
            "lib": ["ok": .number(Double(libEntries.filter { $0.status == .ok }.count)), "broken": .number(Double(libEntries.filter { $0.status == .error }.count))],
            "calls": .number(Double(calls)),
            "errors": .number(Double(errors)),
            "connections": .number(Double(hub.count)),
            "seq": .number(Double(seq)),
        ]
        fields["stateError"] = stateError.map { .string($0) } ?? .null
        fields["dashboard"] = settings.locked { $0.dashboard }.map { .string($0) } ?? .null
        return .object(fields)
    }

    /// A `macro.list` entry; `kind` is `macro` or `lib`.
    static func entryJSON(_ entry: MacroEntry, kind: String) -> MacroValue {
        var fields: OrderedFields = [
            "name": .string(entry.name), "kind": .string(kind), "status": .string(entry.status.rawValue),
            "file": .string(entry.file), "version": .number(Double(entry.version)),
        ]
        if let error = entry.error {
            var detail: OrderedFields = ["message": .string(error.headline)]
            detail["line"] = error.line.map { .number(Double($0)) } ?? .null
            detail["column"] = error.column.map { .number(Double($0)) } ?? .null
            fields["error"] = .object(detail)
        }
        return .object(fields)
    }
}
