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
    }

    /// What kind of failure this is.
    package let code: Code
    /// What happened, in words.
    package let message: String

    package init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    package var description: String { message }

    /// The JSON-RPC error: no such version -32002 (as a missing macro), a bad reference -32602,
    /// the rest -32603.
    var rpcError: RPCError {
        switch code {
        case .noHistory, .noSuchVersion: RPCError(code: RPCError.noSuchMacro, message: message)
        case .invalidReference: RPCError(code: RPCError.invalidParams, message: "Invalid params: \(message)")
        case .corrupt, .io: RPCError(code: RPCError.internalError, message: message)
        }
    }
}
