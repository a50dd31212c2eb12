import Foundation
import MacroBase
import MacroRPC
import Synchronization

/// `macro run`'s Ctrl-C: the call's id (from `macro.started`) and whether Ctrl-C was pressed.
/// A press before the id is known cancels as soon as it arrives; the cancel goes over a
/// connection of its own (the first one is waiting for the reply).
final class RunCancellation: Sendable {
    private let socket: String
    private let state = Mutex<(call: Int?, interrupted: Bool, sent: Bool)>((nil, false, false))

    init(socket: String) { self.socket = socket }

    /// True once Ctrl-C was pressed.
    var interrupted: Bool { state.withLock { $0.interrupted } }

    /// The daemon started the call `call`.
    func started(_ call: Int) {
        let send = state.withLock { state -> Bool in
            state.call = call
            return state.interrupted && !state.sent
        }
        if send { cancel(call) }
    }

    /// Ctrl-C (on a dispatch queue).
    func interrupt() {
        let call = state.withLock { state -> Int? in
            state.interrupted = true
            return state.call
        }
        if let call { cancel(call) }
    }

    private func cancel(_ call: Int) {
        state.withLock { $0.sent = true }
        Console.error("macro: cancelling call \(call) (Ctrl-C)")
        _ = try? RPCClient(path: socket).call(.cancel, ["call": .number(Double(call))])
    }
}
