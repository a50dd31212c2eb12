import Testing

@testable import MacroEngineCore

/// Folding JavaScriptCore's sampling-profiler JSON: which frames stay and how they are named.
/// The input has the shape JavaScriptCore 2.50.6 answers (recorded from a real profile of the
/// engine, with the hardened built-ins on): `{interval, traces: [{timestamp, frames: [...]}],
/// sources: [{sourceID, url?}]}`, frames top of the stack first.
@Suite("Folded stacks")
struct FoldedStacksTests {
    static let heavy = """
        // heavy
        function heavy() {
            return hot(10) + [1].map(function (x) { return x; }).length
                + [2].filter(function (y) { return y; }).length;
        }
        """
    static let work = """
        function hot(n) {
            var s = 0;
            for (var i = 0; i < n; i++) s += Math.sqrt(i);
            return s + (n > 1e9 ? cold() : 0);
        }
        function cold() { return 0; }
        """
    static let sources = [
        FoldedStacks.Source(url: "/m/heavy.js", name: "heavy.js", source: heavy, topLevelName: "heavy"),
        FoldedStacks.Source(url: "/m/lib/work.js", name: "lib/work.js", source: work),
    ]

    /// A frame as JavaScriptCore writes it; `line: nil` is its "no line" (UInt32.max), `code`
    /// the function's code block hash, `bytecode: false` a code block without the bytecode it
    /// was at.
    static func frame(_ name: String, _ sourceID: UInt32, line: Int? = nil, code: String? = nil, bytecode: Bool = true, flags: Int = 0, tier: String = "Baseline") -> String {
        let none = UInt32.max
        let shownLine = line.map(String.init) ?? String(none)
        let location = code.map { "#\($0):\(tier):" + (bytecode ? "bc#7" : "<nil>") } ?? "#<nil>:None:<nil>"
        return ##"{"sourceID":\##(sourceID),"name":"\##(name)","location":"\##(location)","line":\##(shownLine),"column":\##(none),"category":"\##(tier)","flags":\##(flags)}"##
    }

    static let json: String = {
        let native = UInt32.max
        // 2: heavy.js, 3: the engine's call helper, 4: JavaScriptCore's built-ins, 5: the
        // hardening script, 6: lib/work.js, 7: the script that started the call.
        let invoke = frame("__macroengine_invoke", 3, line: 1), program = frame("(program)", 7, line: 1)
        let heavy = frame("heavy", 2, line: 3)
        let traces: [[String]] = [
            [frame("hot", 6, line: 3), heavy, invoke, program],
            [frame("hot", 6), heavy, invoke, program],  // optimized: no line
            [frame("sqrt", native), frame("hot", 6, line: 3), heavy, invoke, program],
            [frame("__macroengine_frozen_get", 5, line: 53), heavy, invoke, program],  // a frozen built-in's accessor
            // The accessor's name paired with a built-in's source (code inlined into another's).
            [frame("__macroengine_frozen_get", 4, line: 1, flags: 1), heavy, invoke, program],
            [frame("", 2, line: 3, code: "AAAAAA"), frame("map", 4, line: 1, flags: 1), heavy, invoke, program],
            // Two anonymous functions: an optimized frame is told by its code block, else unknown.
            [frame("", 2, code: "AAAAAA"), frame("map", 4, line: 1, flags: 1), heavy, invoke, program],
            [frame("", 2, line: 4, code: "BBBBBB"), frame("filter", 4, line: 1, flags: 1), heavy, invoke, program],
            [frame("", 2), frame("filter", 4, line: 1, flags: 1), heavy, invoke, program],
            [frame("(unknown)", native), heavy, invoke, program],
            [frame("setInnerProgress", native), heavy, invoke, program],
            [invoke, program],  // the engine settling the call: no frame of a file
            [heavy, frame("promiseReactionJob", 4, line: 1, flags: 1)],  // an async continuation
            [frame("mystery", 9, line: 7), heavy, invoke, program],  // a source not listed
            // A stale frame over optimized code that was not calling (a sample in C code it
            // called; its bytecode unknown), interpreted or baseline: dropped.
            [frame("", 2, line: 3, code: "AAAAAA", tier: "LLInt"), frame("hot", 6, code: "CCCCCC", bytecode: false, tier: "FTL"), heavy, invoke, program],
            [frame("", 2, line: 3, code: "AAAAAA", tier: "Baseline"), frame("hot", 6, code: "CCCCCC", bytecode: false, tier: "FTL"), heavy, invoke, program],
            // An interpreted callee of optimized code that is at a call: kept.
            [frame("cold", 6, line: 6, code: "DDDDDD", tier: "LLInt"), frame("hot", 6, code: "CCCCCC", tier: "FTL"), heavy, invoke, program],
            // The top frame may lack its bytecode (optimized code JavaScriptCore could not map).
            [frame("hot", 6, code: "CCCCCC", bytecode: false, tier: "FTL"), heavy, invoke, program],
        ]
        let body = traces.map { #"{"timestamp":1.5,"frames":[\#($0.joined(separator: ","))]}"# }.joined(separator: ",")
        return
            #"{"interval":0.001,"traces":[\#(body)],"sources":[{"sourceID":2,"url":"/m/heavy.js"},{"sourceID":5},{"sourceID":4},{"sourceID":6,"url":"/m/lib/work.js"},{"sourceID":3},{"sourceID":7}]}"#
    }()

    @Test func everyFunctionOfAFileIsNamedByFileAndDefinitionLineAndTheEnginesFramesAreFoldedAway() throws {
        let folded = FoldedStacks.fold(try MacroValue(jsonText: Self.json), sources: Self.sources)
        #expect(
            folded.text == """
                heavy (heavy.js:2) 4
                heavy (heavy.js:2);filter;(anonymous) (heavy.js) 1
                heavy (heavy.js:2);filter;(anonymous) (heavy.js:4) 1
                heavy (heavy.js:2);hot (lib/work.js:1) 3
                heavy (heavy.js:2);hot (lib/work.js:1);cold (lib/work.js:6) 1
                heavy (heavy.js:2);hot (lib/work.js:1);sqrt 1
                heavy (heavy.js:2);map;(anonymous) (heavy.js:3) 2
                heavy (heavy.js:2);mystery (line 7) 1
                heavy (heavy.js:2);setInnerProgress 1

                """)
        #expect(folded.samples == 15)
        #expect(folded.dropped == 2)
    }

    /// A file the profiler has no source for keeps its URL and the executed line (an optimized
    /// frame, the line other samples of the function gave).
    @Test func aFileWithoutItsSourceIsNamedByItsURL() throws {
        let folded = FoldedStacks.fold(try MacroValue(jsonText: Self.json), sources: [])
        #expect(
            folded.text == """
                heavy (/m/heavy.js:3) 4
                heavy (/m/heavy.js:3);filter;(anonymous) (/m/heavy.js) 1
                heavy (/m/heavy.js:3);filter;(anonymous) (/m/heavy.js:4) 1
                heavy (/m/heavy.js:3);hot (/m/lib/work.js:3) 3
                heavy (/m/heavy.js:3);hot (/m/lib/work.js:3);cold (/m/lib/work.js:6) 1
                heavy (/m/heavy.js:3);hot (/m/lib/work.js:3);sqrt 1
                heavy (/m/heavy.js:3);map;(anonymous) (/m/heavy.js:3) 2
                heavy (/m/heavy.js:3);mystery (line 7) 1
                heavy (/m/heavy.js:3);setInnerProgress 1

                """)
    }

    @Test func noSamplesFoldToNothing() throws {
        let folded = FoldedStacks.fold(try MacroValue(jsonText: #"{"interval":0.001,"traces":[],"sources":[]}"#), sources: Self.sources)
        #expect(folded.text == "" && folded.samples == 0 && folded.dropped == 0)
    }
}
