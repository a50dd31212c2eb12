import MacroRPC

/// An error of the version history or the audit log, with a stable ``code`` to switch on.
package struct HistoryError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of failure this is.
    package enum Code: String, Sendable {
        /// The file has no kept versions.
        case noHistory
        /// The file has versions, but not the one asked for (never kept, or dropped by retention).
        case noSuchVersion
        /// A reference that is not `NAME@N`, or a name that is neither a macro nor `lib/NAME`.
        case invalidReference
        /// A kept version's object is missing or does not match its hash.
        case corrupt
        /// The history's files could not be read or written.
        case io
        /// Another writer changed the file while a rollback restored it: nothing was rolled back.
        case conflict
    }

    /// What kind of failure this is.
    package let code: Code
    /// What happened, in words.
    package let message: String

    /// An error of `code`, saying `message`.
    package init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    package var description: String { message }

    /// The JSON-RPC error: no such version -32002 (as a missing macro), a bad reference -32602,
    /// the rest -32603, a damaged version with `data: {"reason": "corrupt"}` (the CLI exits 74)
    /// and a rollback's conflict with `data: {"reason": "conflict"}` (exit 75: try again).
    var rpcError: RPCError {
        switch code {
        case .noHistory, .noSuchVersion: RPCError(code: RPCError.noSuchMacro, message: message)
        case .invalidReference: RPCError(code: RPCError.invalidParams, message: "Invalid params: \(message)")
        case .corrupt: RPCError(code: RPCError.internalError, message: message, data: ["reason": "corrupt"])
        case .conflict: RPCError(code: RPCError.internalError, message: message, data: ["reason": "conflict"])
        case .io: RPCError(code: RPCError.internalError, message: message)
        }
    }
}
