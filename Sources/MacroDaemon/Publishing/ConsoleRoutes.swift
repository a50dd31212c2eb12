import MacroEngineCore
import MacroRPC
import NIOCore
import Synchronization

/// Sends the console output of each `macro.call` to the connection that made it, as
/// `macro.console` notifications carrying the request's id exactly as sent, while the call is
/// pending (its timers and awaited continuations included). The output still goes to the log.
final class ConsoleRoutes: Sendable {
    /// Where one call's output goes.
    final class Route: Sendable {
        let connection: Connection
        let id: RPCID
        /// Messages not sent because the client was not reading (its buffer was full).
        let dropped = Atomic<Int>(0)

        init(connection: Connection, id: RPCID) {
            self.connection = connection
            self.id = id
        }
    }

    private let routes = Mutex<[Int: Route]>([:])

    /// Routes the console output of call `call` (reserved with ``MacroEngine/reserveCallID()``)
    /// to `connection`, from before the call starts until ``close(_:call:)``, which the caller
    /// runs when the call settles, before its reply is delivered.
    func open(call: Int, to connection: Connection, id: RPCID) -> Route {
        let route = Route(connection: connection, id: id)
        routes.locked { $0[call] = route }
        return route
    }

    /// Ends the route ``open(call:to:id:)`` made; the client hears how many messages it missed.
    func close(_ route: Route, call: Int) {
        routes.locked { $0[call] = nil }
        let dropped = route.dropped.load(ordering: .relaxed)
        guard dropped > 0 else { return }
        // Told before the reply (which is written after this), so the client knows.
        route.connection.send(
            RPCCodec.consoleNotification(
                id: route.id, call: call, level: "warn",
                message: "\(dropped) console message(s) of this call were not sent: the connection was not reading"))
    }

    /// Sends `message` to the caller of its call, if that call was made with `macro.call`.
    func forward(_ message: ConsoleMessage) {
        guard let call = message.call, let route = routes.locked({ $0[call] }) else { return }
        // A client that does not read its replies must not make macrod buffer without bound.
        guard route.connection.channel.isWritable else {
            route.dropped.add(1, ordering: .relaxed)
            return
        }
        route.connection.send(RPCCodec.consoleNotification(id: route.id, call: call, level: message.method, message: message.message))
    }
}
