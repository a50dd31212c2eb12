/// The file answerable for a run of JavaScript: the macro or lib file whose code it is, as it was
/// when it was loaded. Every outermost entry into JavaScript names its owner in
/// ``EngineOccupancy``, so the stall watch can blame the file whose code stalled the engine, not
/// the engine as a whole:
/// - a macro call, its promise jobs and its timers belong to the macro's file;
/// - a timer or promise job armed by code run at load (a lib file) belongs to that file;
/// - a timer armed by a timer belongs to the owner of the first.
/// The REPL's `engine.eval` and the engine's own housekeeping have no owner.
public struct CodeOwner: Sendable, Hashable, Codable {
    /// The file's path as the library names it.
    public var file: String
    /// FNV-1a 64 of the content that was loaded (see ``Quarantine``): a saved change is another owner.
    public var hash: UInt64
    /// The macro's name; nil for a lib file.
    public var macro: String?

    /// An owner.
    public init(file: String, hash: UInt64, macro: String?) {
        self.file = file
        self.hash = hash
        self.macro = macro
    }

    /// An owner for `source` loaded from `file`.
    public init(file: String, source: String, macro: String?) {
        self.init(file: file, hash: Quarantine.hash(Array(source.utf8)), macro: macro)
    }

    /// `macro NAME` or `lib/NAME.js`, for messages.
    public var label: String { macro.map { "macro \($0)" } ?? file }
}
