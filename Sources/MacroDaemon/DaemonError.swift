/// Why macrod cannot start or keep running. `exitCode` follows sysexits.
public struct MacroDaemonError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    public struct Code: Hashable, Sendable {
        let exit: Int32
        /// Another macrod answers on the socket (75).
        public static let alreadyRunning = Code(exit: 75)
        /// The socket's directory or path cannot be used safely (77).
        public static let permission = Code(exit: 77)
        /// The socket could not be bound (71).
        public static let bind = Code(exit: 71)
        /// inotify could not be set up (71).
        public static let watch = Code(exit: 71)
        /// The config is invalid (78).
        public static let config = Code(exit: 78)
        /// The state could not be saved on shutdown (74, EX_IOERR, as `macro`'s "state file
        /// could not be read or written").
        public static let stateNotSaved = Code(exit: 74)
    }

    /// What went wrong.
    public var code: Code
    /// For the operator.
    public var message: String
    /// The process exit code for this error.
    public var exitCode: Int32 { code.exit }
    /// The message.
    public var description: String { message }

    /// Creates an error.
    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }
}
