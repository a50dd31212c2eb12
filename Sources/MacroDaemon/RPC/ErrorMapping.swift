import Logging
import MacroEngineCore
import MacroRPC

extension RPCError {
    /// The JSON-RPC error for what a method threw: an ``RPCError`` as it is, a ``MacroError``
    /// with its code, anything else -32603 (logged: it is a bug of ours).
    init(_ error: any Error, method: String, logger: Logger) {
        switch error {
        case let error as RPCError: self = error
        case let error as MacroError: self.init(error)
        case let error as HistoryError: self = error.rpcError
        case let error as DebugError: self.init(code: RPCError.debugFailed, message: error.message, data: ["kind": .string(error.code.rawValue)])
        default:
            logger.error("internal error in \(method): \(error)")
            self.init(code: RPCError.internalError, message: "internal error: \(error)")
        }
    }
}
