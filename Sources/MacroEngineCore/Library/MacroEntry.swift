/// What the library knows of one macro file.
public struct MacroEntry: Sendable, Equatable {
    /// Whether the file's current content is live.
    public enum Status: String, Sendable, Equatable {
        /// The file loaded; its function is live.
        case ok
        /// The file does not load; ``MacroEntry/error`` says why (an earlier good version may
        /// still be live, see ``MacroEntry/version``).
        case error
    }

    /// The macro (and global function) name: the file name without `.js`.
    public var name: String
    /// The file's path.
    public var file: String
    /// ok or error.
    public var status: Status
    /// Why the file does not load, with line and column when known.
    public var error: MacroError?
    /// How many versions of this macro have loaded (0: none is live).
    public var version: Int

    /// Creates an entry.
    public init(name: String, file: String, status: Status, error: MacroError? = nil, version: Int) {
        self.name = name
        self.file = file
        self.status = status
        self.error = error
        self.version = version
    }
}
