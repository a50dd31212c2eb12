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
            var frames = (trace["frames"].arrayValue ?? []).map { SampledFrame($0, urls: urls) }
            // A sample taken in C code that optimized code calls directly (`Math.sin` in a DFG or
            // FTL loop) is walked from the VM's last recorded frame, which such calls do not
            // update: its top frame is then a stale one, the last function that ran at that depth
            // (seen in 2.50.6: a `map` callback "called" by the FTL loop, in the interpreter's
            // tier). An interpreted frame on top of an optimized one is taken for that, and its
            // sample goes to the optimized caller.
            if frames.count > 1, frames[0].tier == "LLInt", ["DFG", "FTL"].contains(frames[1].tier) { frames.removeFirst() }
            return Array(frames.reversed())
        }
        let knownLines = KnownLines(traces.joined(), files: filesByURL)
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
}
