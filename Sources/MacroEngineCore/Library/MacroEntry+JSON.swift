import OrderedCollections

extension MacroEntry {
    /// The entry as `macro.list` gives it, the same from macrod and in-process:
    /// `{name, kind, status, file, version, error?: {message, line, column, file?}, quarantined?: true}`, where `line` and
    /// `column` are null when the error has no position. `kind` is `macro` or `lib`.
    public func listJSON(kind: String) -> MacroValue {
        var fields: OrderedDictionary<String, MacroValue> = [
            "name": .string(name), "kind": .string(kind), "status": .string(status.rawValue),
            "file": .string(file), "version": .number(Double(version)),
        ]
        if let error {
            var detail: OrderedDictionary<String, MacroValue> = ["message": .string(error.headline)]
            detail["line"] = error.line.map { .number(Double($0)) } ?? .null
            detail["column"] = error.column.map { .number(Double($0)) } ?? .null
            // Where the error is when that is another file (a module's importer lacking an export).
            if let errorFile = error.file, !errorFile.isEmpty, errorFile != file { detail["file"] = .string(errorFile) }
            fields["error"] = .object(detail)
            if error.code == .quarantined { fields["quarantined"] = true }
        }
        return .object(fields)
    }
}
