import MacroEngineCore
import MacroRPC
import NIOCore

/// Running macros: `macro.call` and `macro.profile`.
extension EngineMethods {
    /// Starts `macro.call` as call `callID`. With an id, the call's console output goes to
    /// `connection` as `macro.console` notifications while it is pending (see ``ConsoleRoutes``).
    /// The statistics see the call's start before its first turn and its outcome where it settles.
    func call(_ request: MethodRequest) throws -> MethodReply {
        let (params, callID, id, connection) = (request.params, request.callID, request.id, request.connection)
        let name = try params.macroName(in: engine)
        let arguments = try params.array("args") ?? []
        let deadline = try params.timeLimit()
        switch params.value["announce"] {
        case .undefined, .bool(false): break
        case .bool(true):
            // The caller learns the call's id before it runs, to cancel it (`macro run`'s Ctrl-C).
            if let id, let callID {
                // The id exactly as the client wrote it, as in every reply.
                connection.send(RPCMessage(text: #"{"jsonrpc":"2.0","method":"macro.started","params":{"id":"# + id.json + #","call":\#(callID)}}"#))
            }
        default: throw params.invalid("announce", "must be true or false")
        }
        // `console: false`: no `macro.console` notification on this connection for this call (a
        // generic JSON-RPC client may take any message with an id for its reply); the lines
        // still go to the log.
        let wantsConsole: Bool
        switch params.value["console"] {
        case .undefined, .bool(true): wantsConsole = true
        case .bool(false): wantsConsole = false
        default: throw params.invalid("console", "must be true or false")
        }
        // The file does not load but an earlier version does: it runs, and the caller is told.
        if wantsConsole, let id, let callID, let entry = library.entry(named: name), entry.status == .error, entry.version > 0,
            entry.error?.code != .quarantined, let error = entry.error
        {
            let message = "\(error.location.map { "\($0): " } ?? "")\(error.headline); the file does not load, so version \(entry.version), the last that did, runs"
            connection.send(RPCMessage(.console(id: id, call: callID, level: "warn", message: message)))
        }
        counters.countCall()
        let start = NIODeadline.now().uptimeNanoseconds
        statistics.value.started(callID ?? 0, macro: name)
        let route = wantsConsole ? id.flatMap { id in callID.map { consoleRoutes.open(call: $0, to: connection, id: id) } } : nil
        // A socket client's run needs no word: the log's default origin is "socket".
        if let callID, !connection.isSocket {
            engine.runLog?.expect(origin: "dashboard", call: callID)
        }
        let outcome = library.callOutcome(name, arguments: arguments, deadline: deadline, callID: callID)
        return .call(outcome, CallRecord(name: name, callID: callID, start: start, route: route))
    }

    /// A call ended (the engine lane calls it when the call's future completes, on the engine's
    /// loop where the statistics live, before the reply is delivered): its console route
    /// closes and the statistics record its outcome and latency.
    func callEnded(_ record: CallRecord, _ outcome: Result<MacroValue, any Error>) {
        if let route = record.route, let callID = record.callID { consoleRoutes.close(route, call: callID) }
        let elapsed = NIODeadline.now().uptimeNanoseconds &- record.start
        var failure: (any Error)?
        if case .failure(let error) = outcome { failure = error }
        statistics.value.finished(record.callID ?? 0, macro: record.name, nanoseconds: elapsed, failure: failure)
    }

    /// `macro.profile {name, args?, runs?, timeoutMs?}`: runs the macro `runs` times (default 10)
    /// one after the other under JavaScriptCore's sampling profiler (``MacroLibrary/profile(_:arguments:runs:deadline:)``);
    /// answers `{name, runs, samples, dropped, folded, macrosDir}`. A run that fails fails the profile with its error.
    func profile(_ request: MethodRequest) throws -> MethodReply {
        let params = request.params
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
        return .future(library.profile(name, arguments: arguments, runs: runs, deadline: deadline).map(\.json))
    }
}
