/// The engine's half of the name rules: a valid identifier that does not shadow an engine global
/// (the globals are the runtime's; see ``MacroName`` in MacroBase for the rest).
extension MacroName {
    /// Throws `.invalidName` when `name` is not an identifier or shadows an engine global.
    static func validate(_ name: String, runtime: JSRuntime) throws {
        if let reason = shadowingReason(name) { throw MacroError(code: .invalidName, message: reason, macro: name) }
        guard isIdentifier(name) else {
            throw MacroError(
                code: .invalidName,
                message: "'\(name)' is not a valid macro name: use letters, digits, _ or $, not starting with a digit, and not a JavaScript keyword",
                macro: name)
        }
        guard !runtime.isBuiltinGlobal(name) else {
            throw MacroError(code: .invalidName, message: "'\(name)' would shadow the engine global '\(name)'; rename the file", macro: name)
        }
    }
}
