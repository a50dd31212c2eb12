import Dispatch
import Foundation
import MacroBase
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Ctrl-C for the REPL: SIGINT no longer ends the process; while code runs it calls
/// `onInterrupt` (which cancels the running calls), so the session and its state stay.
package final class Interrupts {
    /// The handler writes one byte here for each SIGINT; a thread reads them. A signal handler
    /// may only make async-signal-safe calls, so it does nothing else. Before, SIGINT was set to
    /// SIG_IGN and read through libdispatch's signal source: a SIGINT the kernel delivered to a
    /// thread where it was only ignored was lost (under load, a Ctrl-C that did nothing).
    private static let pipe: (read: Int32, write: Int32) = {
        var fds: [Int32] = [-1, -1]
        guard Glibc.pipe(&fds) == 0 else { return (-1, -1) }
        // Not inherited by the editor `macro edit` starts, nor by anything else it runs.
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        return (fds[0], fds[1])
    }()
    /// What a SIGINT runs now (nil: nothing, between sessions).
    private static let current = Mutex<(@Sendable () -> Void)?>(nil)
    private static let reader: Void = {
        let fd = pipe.read
        guard fd >= 0 else { return }
        let thread = Thread {
            var byte: UInt8 = 0
            while true {
                let n = Glibc.read(fd, &byte, 1)
                if n < 0, errno == EINTR { continue }
                guard n == 1 else { return }
                Interrupts.current.withLock { $0 }?()
            }
        }
        thread.name = "macro-sigint"
        thread.start()
    }()

    /// Calls `onInterrupt` (on a thread of its own) for each SIGINT, which no longer ends the process.
    package init(_ onInterrupt: @escaping @Sendable () -> Void) {
        _ = Self.pipe
        Self.reader
        Self.current.withLock { $0 = onInterrupt }
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { _ in
            var byte: UInt8 = 1
            _ = Glibc.write(Interrupts.pipe.write, &byte, 1)
        }
        sigemptyset(&action.sa_mask)
        action.sa_flags = SA_RESTART
        sigaction(SIGINT, &action, nil)
    }

    deinit {
        signal(SIGINT, SIG_DFL)
        Self.current.withLock { $0 = nil }
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
