import Foundation
import Logging
import MacroEngineCore
import MacroRPC
import NIOCore
import Synchronization

/// The `debug.*` methods: step-debugging sessions, each in a process of its own
/// (``DebugProcess``, ``DebugWorker``) with a copy of the progress model, so a stopped, stuck
/// or crashed session never holds up, grows or takes down the daemon. They are answered on the
/// connection's thread, never queued behind the engine. A session belongs to the connection that
/// started it, and ends when that connection closes; it counts against ``sessionLimit`` from the
/// moment it is admitted, before its process starts.
///
/// Requests: `debug.start {name, args?, stopOnEntry?, idleTimeoutMs?, evaluateLimitMs?}` → `{session, files,
/// skipped}`; `debug.setBreakpoints {session, path, breakpoints: [{line, column?, condition?,
/// hitCondition?, logMessage?}]}`; `debug.setFunctionBreakpoints {session, breakpoints: [{name,
/// condition?, hitCondition?}]}`; `debug.setExceptionBreakpoints {session, all?, uncaught?}`;
/// `debug.run {session}`; `debug.pause {session}`; `debug.list` (every open session); `debug.request {session, op, args?}` (a
/// stopped session's `stackTrace`, `scopes`, `variables`, `evaluate`, `setVariable`, `completions`, and the
/// resumes `continue`, `next`, `stepIn`, `stepOut`); `debug.terminate {session}`.
/// Notifications: `debug.stopped`, `debug.output`, `debug.terminated`, each with `session`.
final class DebugMethods: Sendable {
    /// At most this many sessions at once (each is a process with a JavaScript heap).
    static let sessionLimit = 8

    private let engine: MacroEngine
    private let model: ProgressModel
    private let library: MacroLibrary
    /// The live stores: a session starts with a copy of its macro's.
    private let store: MacroStore
    /// The run records a replay starts from.
    private let runs: RunLog
    private let logger: Logger
    private let worker: String
    private let sessions = Mutex<[Int: Owned]>([:])
    private let nextID = Atomic<Int>(0)

    private struct Owned: Sendable {
        let macro: String
        let connection: Connection
        /// Nil while the process starts.
        var process: DebugProcess?
    }

    init(
        engine: MacroEngine, model: ProgressModel, library: MacroLibrary, store: MacroStore, runs: RunLog, logger: Logger,
        worker: String = DebugMethods.workerExecutable
    ) {
        self.store = store
        self.runs = runs
        self.engine = engine
        self.model = model
        self.library = library
        self.logger = logger
        self.worker = worker
    }

    /// The program a session runs in: `$MACROENGINE_DEBUG_WORKER`, else the `macrod` beside a
    /// test bundle that serves in-process, else this process's own executable (macrod).
    static var workerExecutable: String {
        if let path = ProcessInfo.processInfo.environment["MACROENGINE_DEBUG_WORKER"], !path.isEmpty { return path }
        let own = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        guard own.hasSuffix(".xctest") else { return own }
        return URL(fileURLWithPath: own).deletingLastPathComponent().appendingPathComponent("macrod").path
    }

    /// The reply to `request`, a method of the debug lane (``RPCMethod/Lane/debug``).
    func answer(_ request: RPCRequest, _ method: RPCMethod, from connection: Connection) -> EventLoopFuture<RPCMessage?> {
        let loop = connection.channel.eventLoop
        let promise = loop.makePromise(of: RPCMessage?.self)
        let id = request.id
        let reply: @Sendable (Result<MacroValue, any Error>) -> Void = { result in
            guard let id else { return promise.succeed(nil) }
            switch result {
            case .success(let value): promise.succeed(RPCCodec.response(id: id, result: value))
            case .failure(let error): promise.succeed(RPCCodec.response(id: id, error: RPCError(error, method: method.rawValue, logger: self.logger)))
            }
        }
        do {
            try dispatch(method, try Params(request, method: method).value, connection, reply)
        } catch {
            reply(.failure(error))
        }
        return promise.futureResult
    }

    /// The one switch from a debug method to what it does (params already checked against the table).
    private func dispatch(
        _ method: RPCMethod, _ params: MacroValue, _ connection: Connection, _ reply: @escaping @Sendable (Result<MacroValue, any Error>) -> Void
    ) throws {
        if method == .debugStart { return try start(params, connection, reply) }
        if method == .debugList { return reply(.success(list())) }
        let process = try owned(params, connection)
        let forward: @Sendable (Result<MacroValue, DebugError>) -> Void = { reply($0.mapError { $0 }) }
        switch method {
        case .debugSetBreakpoints:
            guard let path = params["path"].stringValue else { throw Self.missing("path", method.rawValue) }
            process.send("setBreakpoints", ["path": .string(path), "breakpoints": params["breakpoints"].arrayValue.map { .array($0) } ?? []], reply: forward)
        case .debugSetFunctionBreakpoints:
            process.send("setFunctionBreakpoints", ["breakpoints": params["breakpoints"].arrayValue.map { .array($0) } ?? []], reply: forward)
        case .debugSetExceptionBreakpoints:
            process.send("setExceptionBreakpoints", ["all": .bool(params["all"].boolValue ?? false), "uncaught": .bool(params["uncaught"].boolValue ?? false)], reply: forward)
        case .debugRun:
            process.send("run", reply: forward)
        case .debugPause:
            process.send("pause", reply: forward)
        case .debugTerminate:
            process.terminate()
            reply(.success([:]))
        case .debugRequest:
            guard let op = params["op"].stringValue else { throw Self.missing("op", method.rawValue) }
            let arguments = params["args"] == .undefined ? [:] : params["args"]
            process.send("request", ["request": .string(op), "args": arguments], reply: forward)
        default:
            throw RPCError(code: RPCError.internalError, message: "internal error: \(method.rawValue) is not a debug method")
        }
    }

    /// The record of run `id` for a replay (`debug.start {run}`): it must be kept, ended, and
    /// its macro's file must hold the version that ran.
    private func replay(_ id: MacroValue) throws -> RunRecord {
        guard let number = id.intValue, number >= 1 else { throw DebugError(.launchFailed, "run must be a run id (a whole number, as `macro runs` lists)") }
        guard let record = runs.record(number) else {
            throw DebugError(.launchFailed, "no run \(number) is kept (`macro runs` lists them)")
        }
        guard record.ended else { throw DebugError(.launchFailed, "run \(number) has not ended yet") }
        let current = (try? library.source(of: record.macro)).map { String(Quarantine.hash(Array($0.utf8)), radix: 16) }
        guard current == record.version else {
            throw DebugError(
                .launchFailed,
                "run \(number) ran version \(record.version ?? "?") of \(record.macro).js, and the file now holds \(current.map { "version \($0)" } ?? "nothing"): a replay runs the code that ran"
            )
        }
        return record
    }

    private func start(_ params: MacroValue, _ connection: Connection, _ reply: @escaping @Sendable (Result<MacroValue, any Error>) -> Void) throws {
        let replayed = try params["run"] == .undefined ? nil : replay(params["run"])
        guard let name = replayed?.macro ?? params["name"].stringValue else { throw Self.missing("name", "debug.start") }
        var options = DebugSession.Options(
            macro: name, arguments: replayed?.arguments ?? params["args"].arrayValue ?? [], directory: library.directory,
            stopOnEntry: replayed.map { !$0.failed } ?? params["stopOnEntry"].boolValue ?? false,
            timeLimit: engine.timeLimit, callDeadline: engine.callDeadline, memoryLimit: engine.configuration.memoryLimit,
            hardenBuiltins: engine.configuration.hardenBuiltins, channels: model.channels,
            values: Dictionary(uniqueKeysWithValues: model.committedValues.map { ($0.channel, $0.value) }),
            evalEnabled: engine.configuration.evalEnabled, quarantine: library.quarantineList)
        options.store = store.committedEntries(name)
        if let replayed {
            // As the run found them: the values, the store (when it was small enough to copy),
            // the same arguments; it stops at the first line, or at the throw of a failed run.
            options.values = replayed.valuesBefore
            if let before = replayed.storeBefore { options.store = before }
            options.stopAtThrow = replayed.failed
        }
        if let idle = params["idleTimeoutMs"].intValue, idle > 0 { options.idleTimeout = .milliseconds(idle) }
        if let limit = params["evaluateLimitMs"].intValue, limit > 0 { options.evaluateLimit = .milliseconds(limit) }
        let id = nextID.add(1, ordering: .relaxed).newValue
        // Admitted, and counted, before anything starts: forty starts in one read make eight sessions.
        try sessions.withLock { sessions in
            guard sessions.count < Self.sessionLimit else {
                throw DebugError(.tooManySessions, "\(Self.sessionLimit) debug sessions are open; end one first")
            }
            sessions[id] = Owned(macro: name, connection: connection)
        }
        connection.channel.closeFuture.whenComplete { [weak self] _ in self?.end(id) }
        let logger = logger
        do {
            let process = try DebugProcess(executable: worker, options: options, logger: logger) { [weak self] event in
                guard let self else { return }
                switch event {
                case .launched(.success(let launched)):
                    logger.info("debug session \(id) of \(name) started")
                    reply(.success(launched.setting("session", .number(Double(id))).setting("macro", .string(name))))
                case .launched(.failure(let error)):
                    sessions.withLock { _ = $0.removeValue(forKey: id) }
                    reply(.failure(error))
                case .notification(let event, let body):
                    forward(event, body, session: id, to: connection)
                }
            }
            let open = sessions.withLock { sessions -> Bool in
                guard sessions[id] != nil else { return false }
                sessions[id]?.process = process
                return true
            }
            process.start()
            // The connection closed while the process started.
            if !open { process.terminate() }
        } catch {
            sessions.withLock { _ = $0.removeValue(forKey: id) }
            throw error
        }
    }

    /// Every open session: `[{session, macro, stopped}]`, by id.
    private func list() -> MacroValue {
        let open = sessions.withLock { $0.sorted { $0.key < $1.key } }
        return .array(
            open.map { id, owned in
                ["session": .number(Double(id)), "macro": .string(owned.macro), "stopped": .bool(owned.process?.isStopped ?? false)]
            })
    }

    private func forward(_ event: String, _ body: MacroValue, session id: Int, to connection: Connection) {
        let notification: RPCNotification
        switch event {
        case "stopped": notification = .debugStopped
        case "output": notification = .debugOutput
        case "terminated":
            notification = .debugTerminated
            sessions.withLock { _ = $0.removeValue(forKey: id) }
        default: return
        }
        connection.send(RPCCodec.notification(notification.rawValue, body.setting("session", .number(Double(id)))))
    }

    /// Ends session `id` (its connection closed).
    private func end(_ id: Int) {
        guard let owned = sessions.withLock({ $0.removeValue(forKey: id) }) else { return }
        logger.info("debug session \(id) ends: its connection closed")
        owned.process?.terminate()
    }

    private func owned(_ params: MacroValue, _ connection: Connection) throws -> DebugProcess {
        guard let id = params["session"].intValue else { throw Self.missing("session", "debug.*") }
        guard let owned = sessions.withLock({ $0[id] }), owned.connection === connection else {
            throw DebugError(.noSuchSession, "no debug session \(id) on this connection")
        }
        guard let process = owned.process else { throw DebugError(.notStopped, "debug session \(id) is still starting") }
        return process
    }

    private static func missing(_ key: String, _ method: String) -> RPCError {
        RPCError(code: RPCError.invalidParams, message: "\(method): missing \"\(key)\"")
    }
}
