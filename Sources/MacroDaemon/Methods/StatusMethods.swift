import Foundation
import MacroEngineCore
import MacroRPC
import NIOCore

/// What macrod reports and the state it holds: `engine.status`, `macro.stats`, `log.recent`,
/// `progress.get`, `progress.set`, `subscribe`, `unsubscribe`, `engine.eval`.
extension EngineMethods {
    /// `engine.status`; the dashboard's URL (with its token) only for macrod's own user.
    func status(_ request: MethodRequest) -> MethodReply {
        let connection = request.connection
        let entries = library.entries
        let libEntries = library.libEntries
        // Since macrod started, across engine restarts (each one a new process image).
        let (socket, dashboard, started) = settings.read { ($0.socket, $0.dashboard, $0.started) }
        let uptime = Double(HostSettings.bootNanoseconds() &- started) / 1e9
        var fields: OrderedFields = [
            "version": .string(version),
            "pid": .number(Double(getpid())),
            "uptime": .number((uptime * 1000).rounded() / 1000),
            "socket": .string(socket),
            "macrosDir": .string(library.directory),
            "macros": ["ok": .number(Double(entries.filter { $0.status == .ok }.count)), "broken": .number(Double(entries.filter { $0.status == .error }.count))],
            "lib": ["ok": .number(Double(libEntries.filter { $0.status == .ok }.count)), "broken": .number(Double(libEntries.filter { $0.status == .error }.count))],
            "calls": .number(Double(counters.calls)),
            "errors": .number(Double(counters.errors)),
            "connections": .number(Double(hub.count)),
            "seq": .number(Double(publisher.seq)),
        ]
        fields["stateError"] = persistence.stateError.map { .string($0) } ?? .null
        fields["dashboard"] = connection.peerIsOwner.load(ordering: .relaxed) ? dashboard.map { .string($0) } ?? .null : .null
        fields["quarantined"] = quarantineJSON()
        fields["javascript"] = engine.pausedReason == nil ? "running" : "paused"
        fields["paused"] = engine.pausedReason.map { .string($0) } ?? .null
        let triggers = library.triggers.status()
        fields["triggers"] = [
            "macros": .number(Double(triggers.count)),
            "paused": .number(Double(triggers.filter { $0["paused"] != .null }.count)),
            "fired": .number(triggers.reduce(0) { $0 + ($1["fired"].doubleValue ?? 0) }),
            "dropped": .number(triggers.reduce(0) { $0 + ($1["dropped"].doubleValue ?? 0) }),
        ]
        return .value(.object(fields))
    }

    /// `macro.stats {name?, reset?}`: every macro's statistics by name (or `name`'s), as they
    /// were before a reset.
    func stats(_ request: MethodRequest) throws -> MethodReply {
        let params = request.params
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
        let quarantined = Set(library.quarantineList.files.compactMap(\.macro))
        let result = MacroValue.array(
            names.map { name in
                guard case .object(var fields) = table.json(name) else { return table.json(name) }
                fields["quarantined"] = .bool(quarantined.contains(name))
                return .object(fields)
            })
        if reset { table.reset(name) }
        return .value(result)
    }

    /// `log.recent {limit?}`.
    func logRecent(_ request: MethodRequest) throws -> MethodReply {
        let params = request.params
        let limit = params.value["limit"] == .undefined ? NotificationHub.recentLimit : params.value["limit"].intValue ?? -1
        guard limit >= 0 else { throw params.invalid("limit", "must be a whole number >= 0") }
        return .value(.array(hub.recentLogs(limit: limit)))
    }

    /// `progress.get`, on the engine lane (a connection with requests there sees their effects).
    func progressGet(_ request: MethodRequest) -> MethodReply {
        .value(publisher.values())
    }

    /// `progress.set {channel: value, ...}`: every channel checked before any is set.
    func progressSet(_ request: MethodRequest) throws -> MethodReply {
        guard case .object(let fields) = request.params.value else {
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
        var asked = OrderedFields()
        for (channel, value) in updates { asked[channel] = .number(value) }
        changes.audit.record(.progressSet, by: request.connection.actor, details: ["values": .object(asked)])
        return .value(publisher.values())
    }

    /// `subscribe {events}`: answers the events the connection is subscribed to now.
    func subscribe(_ request: MethodRequest) throws -> MethodReply {
        .value(Self.subscriptions(request.connection.subscribe(try request.params.events())))
    }

    /// `unsubscribe {events}`: answers the events the connection is still subscribed to.
    func unsubscribe(_ request: MethodRequest) throws -> MethodReply {
        .value(Self.subscriptions(request.connection.unsubscribe(try request.params.events())))
    }

    /// The events of `subscribed`, in their documented order.
    private static func subscriptions(_ subscribed: Set<EventKind>) -> MacroValue {
        ["events": .array(EventKind.allCases.filter(subscribed.contains).map { .string($0.rawValue) })]
    }

    /// `engine.eval {source, timeoutMs?, call?}` (only with `engine_eval: true`): the value of the
    /// script `source`, under the time limit (`timeoutMs`). With `call: true` that value must be
    /// a function, which is then called as a macro call is (what `macro repl` sends): a promise
    /// it returns is awaited within the call deadline (`timeoutMs`), its console output goes to
    /// this connection as `macro.console` notifications, `macro.running` lists it under the
    /// function's name and `macro.cancel` stops it; the answer is the settled value.
    func eval(_ request: MethodRequest) throws -> MethodReply {
        let params = request.params
        guard settings.read({ $0.engineEval }) else {
            throw RPCError(code: RPCError.forbidden, message: "engine.eval is disabled; set engine_eval: true in the config (development only)")
        }
        let source = try params.string("source")
        let limit = try params.timeLimit()
        let asCall: Bool
        switch params.value["call"] {
        case .undefined, .null: asCall = false
        case .bool(let value): asCall = value
        default: throw params.invalid("call", "must be true or false")
        }
        let value = try engine.evaluate(source, file: "<eval>", timeLimit: asCall ? nil : limit)
        guard asCall else { return .value(value) }
        guard case .function(let callable) = value, let function = callable as? MacroFunction else {
            throw params.invalid("source", "must evaluate to a function when call is true")
        }
        let callID = engine.reserveCallID()
        guard let id = request.id else { return .future(function.callFuture([], deadline: limit, callID: callID)) }
        let route = consoleRoutes.open(call: callID, to: request.connection, id: id)
        let future = function.callFuture([], deadline: limit, callID: callID)
        future.whenComplete { [consoleRoutes] _ in consoleRoutes.close(route, call: callID) }
        return .future(future)
    }
}
