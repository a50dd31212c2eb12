import Dispatch
import Logging
import MacroEngineCore
import MacroRPC
import NIOCore
import Synchronization

/// The `debug.*` methods: step-debugging sessions (``DebugSession``), each in an engine and a
/// thread of its own with a copy of the progress model, so a stopped session never holds up the
/// daemon's engine. They are answered on the connection's thread, never queued behind the
/// engine; launching (instrumenting and loading the files) runs on a worker thread. A session
/// belongs to the connection that started it, and ends when that connection closes.
///
/// Requests: `debug.start {name, args?, stopOnEntry?, idleTimeoutMs?}` → `{session, files}`;
/// `debug.setBreakpoints {session, path, breakpoints: [{line, column?, condition?,
/// hitCondition?, logMessage?}]}`; `debug.setExceptionBreakpoints {session, all?, uncaught?}`;
/// `debug.run {session}`; `debug.pause {session}`; `debug.list` (every open session); `debug.request {session, op, args?}` (a
/// stopped session's `stackTrace`, `scopes`, `variables`, `evaluate`, `setVariable`, and the
/// resumes `continue`, `next`, `stepIn`, `stepOut`); `debug.terminate {session}`.
/// Notifications: `debug.stopped`, `debug.output`, `debug.terminated`, each with `session`.
final class DebugMethods: Sendable {
    /// At most this many sessions at once (each has a thread and a JavaScript heap).
    static let sessionLimit = 8

    private let engine: MacroEngine
    private let model: ProgressModel
    private let directory: String
    private let logger: Logger
    private let sessions = Mutex<[Int: Owned]>([:])
    private let nextID = Atomic<Int>(0)

    private struct Owned: Sendable {
        let session: DebugSession
        let connection: Connection
    }

    init(engine: MacroEngine, model: ProgressModel, directory: String, logger: Logger) {
        self.engine = engine
        self.model = model
        self.directory = directory
        self.logger = logger
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
        let session = try owned(params, connection)
        switch method {
        case .debugSetBreakpoints:
            guard let path = params["path"].stringValue else { throw Self.missing("path", method.rawValue) }
            let requests = (params["breakpoints"].arrayValue ?? []).map { b in
                DebugSession.BreakpointRequest(
                    line: b["line"].intValue ?? 0, column: b["column"].intValue, condition: b["condition"].stringValue,
                    hitCondition: b["hitCondition"].stringValue, logMessage: b["logMessage"].stringValue)
            }
            let set = session.setBreakpoints(path: path, requests)
            reply(.success(["breakpoints": .array(set.map(Self.json))]))
        case .debugSetExceptionBreakpoints:
            session.setExceptionBreakpoints(all: params["all"].boolValue ?? false, uncaught: params["uncaught"].boolValue ?? false)
            reply(.success([:]))
        case .debugRun:
            session.start()
            reply(.success([:]))
        case .debugPause:
            session.pause()
            reply(.success([:]))
        case .debugTerminate:
            session.terminate()
            reply(.success([:]))
        case .debugRequest:
            guard let op = params["op"].stringValue else { throw Self.missing("op", method.rawValue) }
            let arguments = params["args"] == .undefined ? [:] : params["args"]
            session.request(op, arguments) { result in reply(result.mapError { $0 }) }
        default:
            throw RPCError(code: RPCError.internalError, message: "internal error: \(method.rawValue) is not a debug method")
        }
    }

    private func start(_ params: MacroValue, _ connection: Connection, _ reply: @escaping @Sendable (Result<MacroValue, any Error>) -> Void) throws {
        guard let name = params["name"].stringValue else { throw Self.missing("name", "debug.start") }
        guard sessions.withLock({ $0.count }) < Self.sessionLimit else {
            throw DebugError(.tooManySessions, "\(Self.sessionLimit) debug sessions are open; end one first")
        }
        var options = DebugSession.Options(
            macro: name, arguments: params["args"].arrayValue ?? [], directory: directory,
            stopOnEntry: params["stopOnEntry"].boolValue ?? false,
            timeLimit: engine.timeLimit, callDeadline: engine.callDeadline, memoryLimit: engine.configuration.memoryLimit,
            hardenBuiltins: engine.configuration.hardenBuiltins, channels: model.channels,
            values: Dictionary(uniqueKeysWithValues: model.committedValues.map { ($0.channel, $0.value) }))
        if let idle = params["idleTimeoutMs"].intValue, idle > 0 { options.idleTimeout = .milliseconds(idle) }
        let id = nextID.add(1, ordering: .relaxed).newValue
        let logger = logger
        let launch = options
        // Instrumenting and loading take tens of milliseconds: not on the connection's loop,
        // which is by default the engine's.
        DispatchQueue.global().async { [self] in
            do {
                let session = try DebugSession(options: launch, logger: logger) { [weak self] event in
                    self?.forward(event, session: id, to: connection)
                }
                sessions.withLock { $0[id] = Owned(session: session, connection: connection) }
                connection.channel.closeFuture.whenComplete { [weak self] _ in self?.end(id) }
                logger.info("debug session \(id) of \(name) started")
                reply(.success(["session": .number(Double(id)), "files": .array(session.map.files.map { .string($0) })]))
            } catch {
                reply(.failure(error))
            }
        }
    }

    /// Every open session: `[{session, macro, stopped}]`, by id.
    private func list() -> MacroValue {
        let open = sessions.withLock { $0.sorted { $0.key < $1.key } }
        return .array(
            open.map { id, owned in
                ["session": .number(Double(id)), "macro": .string(owned.session.options.macro), "stopped": .bool(owned.session.isStopped)]
            })
    }

    private func forward(_ event: DebugEvent, session id: Int, to connection: Connection) {
        switch event {
        case .stopped(let body):
            connection.send(RPCCodec.notification(RPCNotification.debugStopped.rawValue, body.setting("session", .number(Double(id)))))
        case .output(let output):
            var body: MacroValue = ["session": .number(Double(id)), "category": .string(output.category), "text": .string(output.text)]
            if let file = output.file { body = body.setting("file", .string(file)) }
            if let line = output.line { body = body.setting("line", .number(Double(line))) }
            if let column = output.column { body = body.setting("column", .number(Double(column))) }
            connection.send(RPCCodec.notification(RPCNotification.debugOutput.rawValue, body))
        case .terminated(let outcome):
            sessions.withLock { _ = $0.removeValue(forKey: id) }
            connection.send(RPCCodec.notification(RPCNotification.debugTerminated.rawValue, outcome.json.setting("session", .number(Double(id)))))
        }
    }

    /// Ends session `id` (its connection closed).
    private func end(_ id: Int) {
        guard let owned = sessions.withLock({ $0.removeValue(forKey: id) }) else { return }
        logger.info("debug session \(id) ends: its connection closed")
        owned.session.terminate()
    }

    private func owned(_ params: MacroValue, _ connection: Connection) throws -> DebugSession {
        guard let id = params["session"].intValue else { throw Self.missing("session", "debug.*") }
        guard let owned = sessions.withLock({ $0[id] }), owned.connection === connection else {
            throw DebugError(.noSuchSession, "no debug session \(id) on this connection")
        }
        return owned.session
    }

    private static func missing(_ key: String, _ method: String) -> RPCError {
        RPCError(code: RPCError.invalidParams, message: "\(method): missing \"\(key)\"")
    }

    private static func json(_ b: DebugSession.Breakpoint) -> MacroValue {
        var value: MacroValue = ["id": .number(Double(b.id)), "verified": .bool(b.verified), "line": .number(Double(b.line))]
        if let column = b.column { value = value.setting("column", .number(Double(column))) }
        if let message = b.message { value = value.setting("message", .string(message)) }
        return value
    }

}
