/// JavaScriptCore's sampling-profiler JSON folded into the text flame graph tools read
/// (`root;caller;callee COUNT`, one line per distinct stack, sorted).
///
/// **Which file a frame is in.** A sampled frame names its source by a number (`sourceID`).
/// JavaScriptCore 2.50.6 also lists, beside the traces, every source the samples refer to
/// (`"sources": [{"sourceID": 3, "url": "/home/me/macros/heavy.js"}, ...]`, WebKit's
/// `SamplingProfiler::stackTracesAsJSON`), with the URL the source was evaluated under: the
/// engine evaluates every macro and lib file under its path, so this table maps each frame to
/// its file exactly, whatever its name, and in any file (a lib helper, a nested function).
///
/// **What is folded away.** Everything the engine evaluates itself is evaluated *without* a URL
/// (the hardened built-ins' accessors and setters of `Lockdown`, the call helper
/// `__macroengine_invoke`, the console's formatter and wrappers, `sleep`, the progress object's
/// factory), while user code always has one (files under their path, `engine.eval` as `<eval>`,
/// the REPL as `<repl>`): so a frame of a source without a URL that is not one of
/// JavaScriptCore's own built-ins (`flags` 1: `map`, `forEach`, ...) is the engine's, and its
/// samples go to its caller. So do the frames named `__macroengine_*` (the engine names its
/// helpers so, the frozen built-ins' getter included, and a sample of inlined code may pair one
/// function's name with another's source), `(program)` frames, and the frames below the first
/// frame of a file (the engine's way into the call: `apply`, promise jobs); samples with no
/// frame of a file at all (the engine settling a call) are not counted.
///
/// **What stays.** Functions of files as `function (file:line)`, with the line where the
/// function is defined (``FunctionDefinitions``; the executed line when the definition cannot
/// be found); JavaScriptCore's built-ins by name (`map`, `sort`); native functions by name
/// (`Math.sqrt` as `sqrt`, the engine's bridge functions as `setInnerProgress`, `get inner`,
/// `console.log`).
public enum FoldedStacks {
    /// A file the engine evaluated, as the profiler names it.
    public struct Source: Sendable {
        /// The URL it was evaluated under (its path).
        public var url: String
        /// The name shown in frames (its path relative to the macros directory).
        public var name: String
        let definitions: FunctionDefinitions

        /// A file; `topLevelName` names a macro file's one function (its macro's name).
        public init(url: String, name: String, source: String, topLevelName: String? = nil) {
            self.url = url
            self.name = name
            self.definitions = FunctionDefinitions(source: source, topLevelName: topLevelName)
        }
    }

    /// The folded lines and the number of samples they hold.
    public static func fold(_ samples: MacroValue, sources files: [Source]) -> (text: String, samples: Int) {
        let filesByURL = Dictionary(files.map { ($0.url, $0) }, uniquingKeysWith: { first, _ in first })
        // sourceID -> its URL ("" for a source evaluated without one); absent: not listed.
        var urls: [Int: String] = [:]
        for source in samples["sources"].arrayValue ?? [] {
            guard let id = source["sourceID"].intValue else { continue }
            urls[id] = source["url"].stringValue ?? ""
        }
        let traces = (samples["traces"].arrayValue ?? []).map { trace in
            (trace["frames"].arrayValue ?? []).reversed().map { Frame($0, urls: urls) }
        }
        // Optimized (FTL) frames carry no line: the line other samples of that function gave.
        var knownLines: [String: Int] = [:]
        for frame in traces.joined() {
            guard let line = frame.line, knownLines[frame.key] == nil else { continue }
            knownLines[frame.key] = frame.definitionLine(in: filesByURL) ?? line
        }
        var counts: [String: Int] = [:]
        var total = 0
        for trace in traces {
            guard let first = trace.firstIndex(where: { $0.kind == .file }) else { continue }
            let names = trace[first...].compactMap { $0.label(files: filesByURL, knownLines: knownLines) }
            counts[names.joined(separator: ";"), default: 0] += 1
            total += 1
        }
        let text = counts.keys.sorted().map { "\($0) \(counts[$0]!)\n" }.joined()
        return (text, total)
    }

    /// One sampled frame, classified.
    struct Frame {
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
        let line: Int?
        /// A function's identity across samples: its source and name.
        let key: String

        init(_ frame: MacroValue, urls: [Int: String]) {
            name = frame["name"].stringValue ?? ""
            let sourceID = frame["sourceID"].doubleValue ?? -1
            // JavaScriptCore reports "none" as UInt32.max for both the source and the line.
            let valid = { (value: Double) in value >= 0 && value < Double(UInt32.max) }
            line = frame["line"].doubleValue.flatMap { valid($0) && $0 > 0 ? Int($0) : nil }
            key = "\(Int(sourceID)):\(name)"
            guard valid(sourceID) else {
                (kind, url) = (.native, "")
                return
            }
            switch urls[Int(sourceID)] {
            case nil: (kind, url) = (.unlisted, "")
            case let url? where !url.isEmpty: (kind, self.url) = (.file, url)
            default: (kind, url) = (frame["flags"].intValue == 1 ? .builtin : .engine, "")
            }
        }

        func definitionLine(in files: [String: Source]) -> Int? {
            files[url]?.definitions.definitionLine(of: name, executing: line)
        }

        /// The frame's name in the folded text, nil when it is folded away.
        func label(files: [String: Source], knownLines: [String: Int]) -> String? {
            // The engine's named helpers (the call helper, the frozen built-ins' accessors), even
            // where JavaScriptCore pairs the name with another function's source (inlined code).
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
                let resolved = line.map { definitionLine(in: files) ?? $0 } ?? definitionLine(in: files) ?? knownLines[key]
                return resolved.map { "\(shown) (\(file):\($0))" } ?? "\(shown) (\(file))"
            }
        }
    }
}
