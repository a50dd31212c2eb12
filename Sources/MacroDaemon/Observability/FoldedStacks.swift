import MacroEngineCore

/// JavaScriptCore's sampling-profiler JSON folded into the text flame graph tools read
/// (`root;caller;callee COUNT`, one line per distinct stack, sorted). Frames are named
/// `function (file:line)` for a macro's own function (its file is known), `function (line N)`
/// otherwise (JavaScriptCore names a frame's source by a number only); the engine's own helpers
/// (`__macroengine_*`) and the top-level `(program)` frame are folded away.
enum FoldedStacks {
    /// The folded lines and the number of samples with at least one frame left.
    static func fold(_ samples: MacroValue, files: [String: String]) -> (text: String, samples: Int) {
        var counts: [String: Int] = [:]
        var total = 0
        // Optimized (FTL) frames have no line: take the one other samples of that function gave.
        var knownLines: [String: Int] = [:]
        for trace in samples["traces"].arrayValue ?? [] {
            for frame in trace["frames"].arrayValue ?? [] {
                guard let line = frame["line"].intValue, line > 0, line < Int(UInt32.max) else { continue }
                if knownLines[Self.key(frame)] == nil { knownLines[Self.key(frame)] = line }
            }
        }
        for trace in samples["traces"].arrayValue ?? [] {
            let frames = (trace["frames"].arrayValue ?? []).reversed().compactMap { frame -> String? in
                guard let name = frame["name"].stringValue, !name.hasPrefix("__macroengine_"), name != "(program)" else { return nil }
                let display = name.isEmpty ? "(anonymous)" : name
                let line = frame["line"].intValue.flatMap { $0 > 0 && $0 < Int(UInt32.max) ? $0 : nil } ?? knownLines[Self.key(frame)]
                let clean = display.replacingOccurrences(of: ";", with: ",")
                if let file = files[name] { return line.map { "\(clean) (\(file):\($0))" } ?? "\(clean) (\(file))" }
                return line.map { "\(clean) (line \($0))" } ?? clean
            }
            guard !frames.isEmpty else { continue }
            counts[frames.joined(separator: ";"), default: 0] += 1
            total += 1
        }
        let text = counts.keys.sorted().map { "\($0) \(counts[$0]!)\n" }.joined()
        return (text, total)
    }

    /// A function's identity across samples: its source and name.
    private static func key(_ frame: MacroValue) -> String {
        "\(frame["sourceID"].intValue ?? -1):\(frame["name"].stringValue ?? "")"
    }
}
