import CFormat
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

    /// JSC's `name@file:line:col` as `name (file:line:col)`; a frame without a name (JSC's
    /// bare `file:line:col`, or `[native code]`) as `<anonymous> (file:line:col)`, as Node shows it.
    static func formatFrame(_ frame: String) -> String {
        guard let at = frame.firstIndex(of: "@") else { return frame.isEmpty ? frame : "<anonymous> (\(frame))" }
        let name = frame[..<at]
        let location = frame[frame.index(after: at)...]
        return "\(name.isEmpty ? "<anonymous>" : name) (\(location))"
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

    /// A progress value for people: two decimals. C's `%.2f`, which `String(format:)` used,
    /// without Foundation's formatter and without Swift's variadic bridge (both measurable parts
    /// of a `macro run`; docs/performance.md).
    static func format(_ value: Double) -> String {
        // The longest: "-" and 309 digits, ".", 2 decimals.
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: 320) { buffer in
            _ = macroengine_format_fixed2(buffer.baseAddress!, buffer.count, value)
            return String(cString: buffer.baseAddress!)
        }
    }

    /// `text` padded with spaces (or cut) to `width`, as Foundation's
    /// `padding(toLength:withPad:startingAt:)` does; ASCII without Foundation (which counts
    /// UTF-16 units, so anything else still goes through it).
    static func pad(_ text: String, to width: Int) -> String {
        guard text.utf8.allSatisfy({ $0 < 0x80 }) else { return text.padding(toLength: width, withPad: " ", startingAt: 0) }
        let count = text.utf8.count
        return count >= width ? String(text.utf8.prefix(width))! : text + String(repeating: " ", count: width - count)
    }
}
