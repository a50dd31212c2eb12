import Foundation
import MacroEngineCore
import MacroRPC
import Synchronization

/// A daemon call's console output (`macro.console` notifications, sent to the calling
/// connection before the reply) printed on stderr like an in-process run's.
enum ConsoleForwarding {
    /// Prints `note` when it is console output of the request `id`; `macro` names the caller.
    static func print(_ note: MacroValue, id: MacroValue, macro: String) {
        guard note["method"] == "macro.console" else { return }
        let params = note["params"]
        guard params["id"] == id || params["id"] == .undefined else { return }
        Console.error(line(level: params["level"].stringValue ?? "log", message: params["message"].stringValue ?? "", macro: macro))
    }

    /// `[macro] message` for log and info, `[macro] warning: message` and so on for the others,
    /// as an in-process run prints them.
    static func line(level: String, message: String, macro: String) -> String {
        let shown = level == "log" || level == "info" ? "" : "\(level == "warn" ? "warning" : level): "
        return "[\(macro)] \(shown)\(message)"
    }
}

private let requestCounter = Mutex<Int>(0)

extension RPCClient {
    /// Calls `method` and hands every notification that arrives before the reply to
    /// `onNotification` (e.g. the call's console output). Uses its own ids ("macro-N"), so it
    /// mixes with ``call(_:_:)`` on one connection.
    func call(_ method: String, _ params: MacroValue?, onNotification: (MacroValue, MacroValue) -> Void) throws -> MacroValue {
        let id = MacroValue.string("macro-\(requestCounter.withLock { $0 += 1; return $0 })")
        var request: OrderedFields = ["jsonrpc": "2.0", "id": id, "method": .string(method)]
        if let params { request["params"] = params }
        try send(raw: MacroValue.object(request).jsonText())
        while true {
            guard let message = try readMessage() else {
                throw RPCError(code: RPCError.internalError, message: "macrod closed the connection before answering \(method)")
            }
            if message["id"] == .undefined, message["method"] != .undefined {
                onNotification(message, id)
                continue
            }
            guard message["id"] == id else { continue }
            if let error = RPCError(json: message["error"]) { throw error }
            return message["result"]
        }
    }
}
