import Foundation

extension MacroLibrary {
    /// `error` with a note pointing at the broken lib files when it is a `ReferenceError` and a
    /// lib file does not load: the missing global is most likely one that file would define.
    /// Files whose text mentions the missing name are named; if none does, every broken one is.
    /// Other errors come back unchanged.
    ///
    /// `ReferenceError: Can't find variable: setAll; note: lib/rings.js failed to load:
    /// SyntaxError: Unexpected token ';' at line 3:5`
    public func explainingBrokenLib(_ error: any Error) -> any Error {
        guard var failure = error as? MacroError, failure.errorName == "ReferenceError" else { return error }
        let broken = libEntries.filter { $0.status == .error }
        guard !broken.isEmpty else { return error }
        let missing = failure.message.split(separator: ":").last.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
        let suspects =
            missing.isEmpty
            ? []
            : broken.filter { entry in
                ((try? String(contentsOfFile: entry.file, encoding: .utf8)) ?? "").contains(missing)
            }
        let notes = (suspects.isEmpty ? broken : suspects).map { entry -> String in
            var note = "\(entry.name).js failed to load"
            guard let cause = entry.error else { return note }
            note += ": \(cause.headline)"
            if let line = cause.line { note += " at line \(line)" + (cause.column.map { ":\($0)" } ?? "") }
            return note
        }
        failure.message += "; note: " + notes.joined(separator: "; ")
        return failure
    }
}

extension MacroLibrary: CallFailureExplainer {
    /// ``explainingBrokenLib(_:)``: a macro call's failure as its caller hears it.
    func explain(_ error: any Error) -> any Error { explainingBrokenLib(error) }
}
