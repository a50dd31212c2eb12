import MacroDaemon

/// Why the dashboard cannot start. Converted to ``MacroDaemonError`` (and its exit code) by macrod.
struct DashboardError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    enum Code: Sendable {
        /// A non-loopback address without `http_allow_remote: true` (exit 78).
        case notLoopback
        /// The address could not be bound (exit 71).
        case bind
        /// The token file could not be written (exit 77).
        case tokenFile
    }

    /// What went wrong.
    var code: Code
    /// For the operator.
    var message: String

    var description: String { message }

    /// The daemon error with the matching exit code.
    var daemonError: MacroDaemonError {
        switch code {
        case .notLoopback: return MacroDaemonError(code: .config, message: message)
        case .bind: return MacroDaemonError(code: .bind, message: message)
        case .tokenFile: return MacroDaemonError(code: .permission, message: message)
        }
    }
}
