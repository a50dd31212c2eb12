/// Why a debugger request failed.
public struct DebugError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of failure.
    public enum Code: String, Sendable {
        /// The session could not start: no such macro, a file that does not parse, no acorn.
        case launchFailed
        /// The request needs a stopped session (stack, variables, evaluate, stepping).
        case notStopped
        /// The request is malformed (an unknown variables reference, a missing argument).
        case invalidRequest
        /// Evaluating the expression threw.
        case evaluationFailed
        /// The session has ended.
        case ended
        /// No session with that id.
        case noSuchSession
        /// Too many sessions are open.
        case tooManySessions
    }

    /// What kind of failure.
    public var code: Code
    /// In words.
    public var message: String

    /// Creates an error.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// The message.
    public var description: String { message }
}
