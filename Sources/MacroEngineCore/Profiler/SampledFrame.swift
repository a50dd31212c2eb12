/// One frame of a sample, as JavaScriptCore 2.50.6 writes it (`{sourceID, name, location, line,
/// column, category, flags}`), classified for folding (see ``FoldedStacks``).
struct SampledFrame {
    enum Kind: Equatable {
        /// A function of a source evaluated under a URL (a file).
        case file
        /// A function of a source the engine evaluated itself (no URL): folded away.
        case engine
        /// One of JavaScriptCore's built-ins written in JavaScript (`map`).
        case builtin
        /// A native function (`sqrt`, `setInnerProgress`).
        case native
        /// A source the JSON does not list (a JavaScriptCore without `sources`).
        case unlisted
    }

    let name: String
    let kind: Kind
    let url: String
    /// The line executing in the frame; nil in optimized (FTL) code, which does not say.
    let line: Int?
    /// The function by its source and name.
    let nameKey: String
    /// The function by its source and code block (`location` is `#HASH:TIER:bc#N`; the hash is
    /// the function's, the same in every tier), nil when the frame has none.
    let codeKey: String?
    /// False for a frame of JavaScript whose code block JavaScriptCore found but not the bytecode
    /// it was at (`location` `#HASH:TIER:<nil>`): below the top of a sample, a frame that was
    /// not calling anything (see ``FoldedStacks``).
    let hasBytecodeIndex: Bool

    init(_ frame: MacroValue, urls: [Int: String]) {
        name = frame["name"].stringValue ?? ""
        let sourceID = frame["sourceID"].intValue ?? -1
        // JavaScriptCore reports "none" as UInt32.max for both the source and the line.
        let valid = { (value: Double) in value >= 0 && value < Double(UInt32.max) }
        line = frame["line"].doubleValue.flatMap { valid($0) && $0 > 0 ? Int($0) : nil }
        nameKey = "\(sourceID):\(name)"
        let location = frame["location"].stringValue?.split(separator: ":") ?? []
        codeKey = location.first.flatMap { $0.hasPrefix("#") && $0 != "#<nil>" ? "\(sourceID)\($0)" : nil }
        hasBytecodeIndex = codeKey == nil || (location.count > 2 && location[2] != "<nil>")
        guard valid(Double(sourceID)) else {
            (kind, url) = (.native, "")
            return
        }
        switch urls[sourceID] {
        case nil: (kind, url) = (.unlisted, "")
        case let url? where !url.isEmpty: (kind, self.url) = (.file, url)
        default: (kind, url) = (frame["flags"].intValue == 1 ? .builtin : .engine, "")
        }
    }

    /// The line where the frame's function is defined, when its file tells.
    func definitionLine(in files: [String: FoldedStacks.Source]) -> Int? {
        files[url]?.definitions.definitionLine(of: name, executing: line)
    }

    /// The frame's name in the folded text, nil when it is folded away.
    func label(files: [String: FoldedStacks.Source], knownLines: KnownLines) -> String? {
        guard name != "(program)", !name.hasPrefix("__macroengine_") else { return nil }
        let shown = (name.isEmpty ? "(anonymous)" : name).replacingOccurrences(of: ";", with: ",")
        switch kind {
        case .engine: return nil
        case .native, .builtin:
            // "(host)", "(unknown)": JavaScriptCore could not tell what it was.
            return name.isEmpty || name.hasPrefix("(") ? nil : shown
        case .unlisted:
            return line.map { "\(shown) (line \($0))" } ?? shown
        case .file:
            let file = files[url]?.name ?? url
            let resolved = line.map { definitionLine(in: files) ?? $0 } ?? definitionLine(in: files) ?? knownLines.line(of: self)
            return resolved.map { "\(shown) (\(file):\($0))" } ?? "\(shown) (\(file))"
        }
    }
}

/// For frames without a line (optimized code): the line other samples of the same function
/// gave, found by code block, else by name when only one function of that name was seen.
struct KnownLines {
    private var byCode: [String: Int] = [:]
    private var byName: [String: Int] = [:]
    private var ambiguousNames: Set<String> = []

    init(_ frames: some Sequence<SampledFrame>, files: [String: FoldedStacks.Source]) {
        for frame in frames where frame.kind == .file {
            guard let line = frame.line else { continue }
            let resolved = frame.definitionLine(in: files) ?? line
            if let code = frame.codeKey, byCode[code] == nil { byCode[code] = resolved }
            if let known = byName[frame.nameKey], known != resolved { ambiguousNames.insert(frame.nameKey) }
            if byName[frame.nameKey] == nil { byName[frame.nameKey] = resolved }
        }
    }

    func line(of frame: SampledFrame) -> Int? {
        if let code = frame.codeKey, let line = byCode[code] { return line }
        return ambiguousNames.contains(frame.nameKey) ? nil : byName[frame.nameKey]
    }
}
