import Foundation
import MacroEngineCore

/// Output helpers: results on stdout, diagnostics on stderr.
enum Console {
    static func error(_ message: String) {
        FileHandle.standardError.write(Data((message + "\n").utf8))
    }

    /// `file:line:col: error: Name: message`, then the JS stack indented, Node style.
    static func report(_ error: MacroError) {
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

    /// The error as a JSON object (for `--json`).
    static func json(_ error: MacroError) -> MacroValue {
        var object: MacroValue = ["code": .string("\(error.code)"), "message": .string(error.message)]
        guard case .object(var fields) = object else { return object }
        if let name = error.errorName { fields["name"] = .string(name) }
        if let macro = error.macro { fields["macro"] = .string(macro) }
        if let file = error.file { fields["file"] = .string(file) }
        if let line = error.line { fields["line"] = .number(Double(line)) }
        if let column = error.column { fields["column"] = .number(Double(column)) }
        if let stack = error.stack { fields["stack"] = .string(stack) }
        object = .object(fields)
        return object
    }

    /// A progress value for people: two decimals.
    static func format(_ value: Double) -> String { String(format: "%.2f", value) }
}
