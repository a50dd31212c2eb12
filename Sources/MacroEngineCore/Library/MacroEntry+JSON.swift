import OrderedCollections

extension MacroEntry {
    /// The entry as `macro.list` gives it, the same from macrod and in-process:
    /// `{name, kind, status, file, version, error?: {message, line, column}, quarantined?: true}`, where `line` and
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
            fields["error"] = .object(detail)
            if error.code == .quarantined { fields["quarantined"] = true }
        }
        return .object(fields)
    }
}
