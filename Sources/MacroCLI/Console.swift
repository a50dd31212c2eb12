import Foundation
import MacroBase
import MacroRPC
import Synchronization

/// Output helpers: results on stdout, diagnostics on stderr.
package enum Console {
    /// Writes one line on stderr (and remembers it for the `--json` object of a failure).
    package static func error(_ message: String) {
        lastErrorLine.withLock { $0 = message }
        FileHandle.standardError.write(Data((message + "\n").utf8))
    }

    private static let lastErrorLine = Mutex<String?>(nil)

    /// The last line written with ``error(_:)``, for the `--json` object of a failure whose
    /// text was printed on the way.
    static var lastError: String? {
        lastErrorLine.withLock { $0 }.map { $0.hasPrefix("macro: ") ? String($0.dropFirst(7)) : $0 }
    }

    /// Prints one JSON value on stdout and flushes.
    package static func printJSON(_ value: MacroValue) {
        print(value.jsonText())
        fflush(nil)
    }

    /// `file:line:col: error: Name: message`, then the JS stack indented, Node style.
    package static func report(_ error: MacroError) {
        Console.error(error.description)
        guard let stack = error.stack, !stack.isEmpty else { return }
        for frame in stack.split(separator: "\n") {
            Console.error("    at " + formatFrame(String(frame)))
        }
    }

    /// JSC's `name@file:line:col` as `name (file:line:col)`.
    static func formatFrame(_ frame: String) -> String {
        guard let at = frame.firstIndex(of: "@") else { return frame }
        let name = frame[..<at]
        let location = frame[frame.index(after: at)...]
        if name.isEmpty { return String(location) }
        return "\(name) (\(location))"
    }

    /// The error's fields for `--json`: name, macro, file, line, column, stack.
    static func details(_ error: MacroError) -> OrderedFields {
        var fields: OrderedFields = [:]
        if let name = error.errorName { fields["name"] = .string(name) }
        if let macro = error.macro { fields["macro"] = .string(macro) }
        if let file = error.file { fields["file"] = .string(file) }
        if let line = error.line { fields["line"] = .number(Double(line)) }
        if let column = error.column { fields["column"] = .number(Double(column)) }
        if let stack = error.stack { fields["stack"] = .string(stack) }
        return fields
    }

    /// A progress value for people: two decimals.
    static func format(_ value: Double) -> String { String(format: "%.2f", value) }
}
