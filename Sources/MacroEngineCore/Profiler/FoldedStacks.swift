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
/// **What is dropped.** A sample in which a frame below the top has no bytecode (a caller that
/// was not at a call): JavaScriptCore walked it from a stale frame, and what it draws above that
/// frame is not its callee. Such samples are counted apart (`dropped`), never drawn.
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

    /// The folded lines, the number of samples they hold, and the number of samples dropped
    /// because JavaScriptCore drew a frame above one that was not calling it.
    public static func fold(_ samples: MacroValue, sources files: [Source]) -> (text: String, samples: Int, dropped: Int) {
        let filesByURL = Dictionary(files.map { ($0.url, $0) }, uniquingKeysWith: { first, _ in first })
        // sourceID -> its URL ("" for a source evaluated without one); absent: not listed.
        var urls: [Int: String] = [:]
        for source in samples["sources"].arrayValue ?? [] {
            guard let id = source["sourceID"].intValue else { continue }
            urls[id] = source["url"].stringValue ?? ""
        }
        var dropped = 0
        let traces = (samples["traces"].arrayValue ?? []).compactMap { trace -> [SampledFrame]? in
            let frames = (trace["frames"].arrayValue ?? []).map { SampledFrame($0, urls: urls) }
            // A caller is at a call: JavaScriptCore found the bytecode it was at (its call site).
            // A frame below the top without one was not calling anything, so what is drawn above
            // it is not its callee: a sample taken in C code that optimized code calls directly
            // (`Math.sin` in an FTL loop) is walked from the VM's last recorded frame, which such
            // calls do not update, and that frame may have returned long ago (seen in 2.50.6: a
            // `map` callback of `heavy`, interpreted or baseline, over `hot` running in FTL with
            // no bytecode). Such a sample cannot be placed: it is dropped, and counted.
            guard frames.dropFirst().allSatisfy(\.hasBytecodeIndex) else {
                dropped += 1
                return nil
            }
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
        return (text, total, dropped)
    }
}
