import Logging
import MacroEngineCore
import MacroRPC
import NIOCore

/// The requests answered on the connection's thread, never queued behind the engine, so they
/// work while a macro keeps it busy: `macro.running`, `macro.cancel {call}` (its reply waits
/// until the call has actually stopped), and `progress.get` of the committed values while the
/// asking connection has nothing on the engine (so its own earlier requests are seen; no turn
/// in progress is ever shown).
struct ControlLane: Sendable {
    let engine: MacroEngine
    let publisher: ProgressPublisher
    let inFlight: InFlightRequests
    let counters: RequestCounters
    let logger: Logger

    /// The reply, or nil when `method` belongs to the engine lane.
    func answer(_ request: RPCRequest, _ method: RPCMethod, from connection: Connection) -> EventLoopFuture<RPCMessage?>? {
        let replyLoop = connection.channel.eventLoop
        if method.descriptor.lane == .controlWhenIdle, connection.engineRequests.load(ordering: .relaxed) == 0,
            case .undefined = request.params
        {
            return replyLoop.makeSucceededFuture(request.id.map { RPCCodec.response(id: $0, result: publisher.values(committed: true)) })
        }
        guard method.bypassesEngine else { return nil }
        guard let id = request.id else {
            _ = try? result(request, method)
            return replyLoop.makeSucceededFuture(nil)
        }
        do {
            let result = try self.result(request, method)
            guard method == .cancel, let call = result["call"].intValue else {
                return replyLoop.makeSucceededFuture(RPCCodec.response(id: id, result: result))
            }
            return replyWhenStopped(id: id, call: call, result: result, from: connection)
        } catch {
            counters.countError()
            return replyLoop.makeSucceededFuture(RPCCodec.response(id: id, error: RPCError(error, method: request.method, logger: logger)))
        }
    }

    /// The reply to a `macro.cancel` that asked call `call` to stop: `result` (cancelled: true)
    /// once the call has actually stopped, on the connection's loop; a restart answers it too.
    func replyWhenStopped(id: RPCID, call: Int, result: MacroValue, from connection: Connection) -> EventLoopFuture<RPCMessage?> {
        let promise = connection.channel.eventLoop.makePromise(of: RPCMessage?.self)
        let token = inFlight.add(.init(id: id, kind: .cancel(call), route: .promise(promise), connection: connection))
        engine.whenCallEnds(call) { [inFlight] in
            inFlight.take(token)?.route.deliver(RPCCodec.response(id: id, result: result))
        }
        return promise.futureResult
    }

    /// The result of `macro.running`, or of `macro.cancel {call}` (which asks the call to stop
    /// and says so; its reply waits for the stop in ``answer(_:_:from:)``).
    func result(_ request: RPCRequest, _ method: RPCMethod) throws -> MacroValue {
        let params = try Params(request, method: method)
        if method == .running {
            return .array(
                engine.runningCalls.map { call in
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
}
