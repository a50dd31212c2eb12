import Foundation
import MacroBase
import MacroRPC

/// A daemon call's console output (`macro.console` notifications, sent to the calling
/// connection before the reply) printed on stderr like an in-process run's.
enum ConsoleForwarding {
    /// Prints `note` when it is console output of the request `id`; `macro` names the caller.
    static func print(_ note: MacroValue, id: MacroValue, macro: String) {
        guard note["method"] == .string(RPCNotification.console.rawValue) else { return }
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
