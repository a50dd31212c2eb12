import Dispatch
import Foundation
import MacroBase

#if canImport(Glibc)
import Glibc
#endif

/// Ctrl-C for the REPL: SIGINT no longer ends the process; while code runs it calls
/// `onInterrupt` (which cancels the running calls), so the session and its state stay.
package final class Interrupts {
    private let source: any DispatchSourceSignal

    /// Ignores SIGINT as a process signal and calls `onInterrupt` (on a global queue) for each one.
    package init(_ onInterrupt: @escaping @Sendable () -> Void) {
        signal(SIGINT, SIG_IGN)
        source = DispatchSource.makeSignalSource(signal: SIGINT, queue: .global())
        source.setEventHandler(handler: onInterrupt)
        source.resume()
    }

    deinit {
        source.cancel()
        signal(SIGINT, SIG_DFL)
    }

    /// Runs `body` (the handler is active the whole session; this marks where code runs).
    package func during<T>(_ body: () throws -> T) rethrows -> T { try body() }
}

/// Values from the daemon printed the way the local REPL prints them (Node's util.inspect
/// style): strings quoted, `[ 1, 2 ]`, `{ a: 1, 'b-c': [ 2 ] }`.
package enum ReplFormat {
    /// `value` as the local REPL prints it.
    package static func inspect(_ value: MacroValue) -> String {
        switch value {
        case .string(let text): return MacroValue.string(text).jsonText()
        case .array(let items):
            return items.isEmpty ? "[]" : "[ " + items.map(inner).joined(separator: ", ") + " ]"
        case .object(let fields):
            return fields.isEmpty ? "{}" : "{ " + fields.map { "\(key($0.key)): \(inner($0.value))" }.joined(separator: ", ") + " }"
        case .undefined: return "undefined"
        default: return value.jsonText()
        }
    }

    /// Strings inside arrays and objects: single quotes, as Node prints them.
    private static func inner(_ value: MacroValue) -> String {
        if case .string(let text) = value { return "'" + text.replacingOccurrences(of: "'", with: "\\'") + "'" }
        return inspect(value)
    }

    private static func key(_ name: String) -> String {
        MacroName.isIdentifier(name) || name.allSatisfy(\.isNumber) ? name : "'\(name)'"
    }
}
