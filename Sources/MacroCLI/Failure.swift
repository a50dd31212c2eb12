import ArgumentParser
import Foundation
import MacroBase
import MacroRPC

/// A command that failed: its exit code, a kind for scripts, and what to tell the user.
/// `MacroCommand.main` prints it once: the text on stderr (unless already printed), and with
/// `--json` one object `{"error": {"code": EXIT, "kind": KIND, "message": ..., ...}}` on stdout.
package struct Failure: Error {
    /// The process's exit code (see `Exit`).
    package var exit: Int32
    /// A stable name: `usage`, `threw`, `syntax`, `noSuchMacro`, `unavailable`, `timeout`, `browser`, ...
    package var kind: String
    /// One line for people.
    package var message: String
    /// Further fields for `--json` (file, line, column, stack, rpcCode, ...).
    package var details: OrderedFields = [:]
    /// True when the text was already written to stderr (compiler-style diagnostics).
    package var printed = false

    /// A failure with its exit code, kind and message.
    package init(exit: Int32, kind: String, message: String, details: OrderedFields = [:], printed: Bool = false) {
        self.exit = exit
        self.kind = kind
        self.message = message
        self.details = details
        self.printed = printed
    }

    /// The JSON object printed with `--json`.
    package var json: MacroValue {
        var fields: OrderedFields = ["code": .number(Double(exit)), "kind": .string(kind), "message": .string(message)]
        for (key, value) in details where fields[key] == nil { fields[key] = value }
        return .object(["error": .object(fields)])
    }

    /// The kind for an exit code when nothing more precise is known.
    package static func kind(forExit code: Int32) -> String {
        switch code {
        case 1: return "checkFailed"
        case 64: return "usage"
        case 65: return "threw"
        case 66: return "noSuchMacro"
        case 69: return "unavailable"
        case 71: return "editor"
        case 74: return "io"
        case 75: return "timeout"
        case 77: return "refused"
        case 78: return "config"
        default: return "internal"
        }
    }

    /// A failure for an engine error (a throw, a syntax error, a timeout, a missing macro),
    /// its text already printed compiler-style.
    package static func engine(_ error: MacroError, printed: Bool = true) -> Failure {
        Failure(exit: Exit.code(for: error).rawValue, kind: kind(for: error), message: error.message, details: Console.details(error), printed: printed)
    }

    /// The kind for an engine error (`timeout`, `cancelled`, `noSuchMacro`, `syntax`, ...).
    package static func kind(for error: MacroError) -> String {
        switch error.code {
        case .timeout: return "timeout"
        case .cancelled: return "cancelled"
        case .noSuchMacro: return "noSuchMacro"
        case .invalidName: return "invalidName"
        case .syntax: return "syntax"
        case .io where error.line == nil && error.macro == nil: return "io"
        default: return "\(error.code)"
        }
    }
}
