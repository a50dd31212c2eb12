/// Where each hook of an instrumented program is in the user's own files: every statement of
/// every function (a *site*), with its 1-based line and column. Breakpoints are resolved to
/// sites here, on the Swift side, so that setting one never needs the session's thread.
public struct SourceMap: Sendable {
    /// One hookable statement.
    public struct Site: Sendable, Equatable {
        /// Index in ``SourceMap/files``.
        public var file: Int
        /// 1-based line and column of the statement's first character.
        public var line: Int
        /// 1-based column of the statement's first character.
        public var column: Int
        /// The site's index, as the hooks name it.
        public var id: Int
        /// The index in ``SourceMap/functionNames`` of the function the statement is in.
        public var function: Int
    }

    /// The files' paths, in load order (lib files first).
    public let files: [String]
    /// All sites, by id.
    public let sites: [Site]
    /// Each function's name and where it starts.
    public let functionNames: [String]

    init(files: [String], sites: [MacroValue], functions: [MacroValue]) {
        self.files = files
        self.sites = sites.enumerated().map { id, entry in
            Site(file: entry[5].intValue ?? 0, line: entry[0].intValue ?? 0, column: entry[1].intValue ?? 0, id: id, function: entry[2].intValue ?? -1)
        }
        functionNames = functions.map { $0[0].stringValue ?? "(anonymous)" }
    }

    /// The site a breakpoint at `line` (and `column`, when given) of `path` binds to: the first
    /// statement that starts on that line at or after the column, else the first statement on a
    /// later line. nil when the file has no statement there (or is not part of the session).
    public func site(path: String, line: Int, column: Int?) -> Site? {
        guard let file = files.firstIndex(of: path) else { return nil }
        let candidates = sites.filter { $0.file == file && ($0.line > line || ($0.line == line && $0.column >= (column ?? 0))) }
        return candidates.min { ($0.line, $0.column) < ($1.line, $1.column) }
    }

    /// The sites a function breakpoint on `name` binds to: the first statement of each function
    /// of that name (a function without statements has none), in load order.
    public func entrySites(ofFunction name: String) -> [Site] {
        var first: [Int: Site] = [:]
        for site in sites where site.function >= 0 && site.function < functionNames.count && functionNames[site.function] == name {
            if first[site.function] == nil { first[site.function] = site }
        }
        return first.values.sorted { $0.id < $1.id }
    }

    /// Whether a function of the session's files is named `name`.
    public func hasFunction(named name: String) -> Bool { functionNames.contains(name) }
}
