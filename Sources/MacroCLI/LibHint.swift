import MacroBase

/// When a macro fails on a name that is not defined and a lib file does not load, says so:
/// the helper is most likely in that file.
package enum LibHint {
    /// Prints `note: ...` lines on stderr for each broken lib entry when `message` is a
    /// ReferenceError of a missing name.
    package static func print(for message: String, libs: [MacroValue]) {
        guard message.contains("Can't find variable") || message.contains("is not defined") else { return }
        for entry in libs where entry["status"] == "error" {
            guard let diagnostic = List.diagnostic(entry) else { continue }
            Console.error("note: \(entry["name"].stringValue ?? "a lib file") does not load, so what it defines is missing: \(diagnostic)")
        }
    }
}
