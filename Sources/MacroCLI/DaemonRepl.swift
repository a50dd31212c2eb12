import Foundation
import MacroBase
import MacroRPC

/// The REPL's code run by macrod: `engine.eval` with `call: true`, so it runs as a call (its
/// promise awaited, its console output sent here as `macro.console` notifications, listed by
/// `macro.running` under the session's function name, which Ctrl-C cancels).
struct DaemonRepl: ReplBackend {
    let client: RPCClient
    let functionName: String
    let timeoutMs: Int?

    var cancel: @Sendable () -> Void {
        { [path = client.path, functionName] in Self.cancelCalls(named: functionName, at: path) }
    }

    func run(_ script: String) throws -> MacroValue {
        var params: OrderedFields = ["source": .string(script), "call": true]
        if let timeoutMs { params["timeoutMs"] = .number(Double(timeoutMs)) }
        do {
            return try client.call(.eval, .object(params)) { note, id in
                let output = note["params"]
                guard note["method"] == .string(RPCNotification.console.rawValue), output["id"] == id else { return }
                ReplConsole.print(level: output["level"].stringValue ?? "log", message: output["message"].stringValue ?? "")
            }
        } catch let error as RPCError {
            if DaemonLink.isDisconnect(error) {
                throw Failure(exit: 69, kind: "unavailable", message: "macro repl: macrod at \(client.path) went away (\(error.message))")
            }
            throw MacroError(rpc: error)
        }
    }

    /// Cancels this session's call (on a connection of its own: the session's waits for the reply).
    static func cancelCalls(named name: String, at path: String) {
        guard let client = try? RPCClient(path: path), let running = try? client.call(.running).arrayValue else { return }
        for call in running where call["name"] == .string(name) {
            _ = try? client.call(.cancel, ["call": call["call"]])
        }
    }
}
