import Foundation
import Logging
import MacroEngineCore
import MacroTestSupport
import Testing

/// The instrumented code means what the file means: a macro using most of the language gives
/// the same result in a debug session as in the engine, and stops where expected in each form.
@Suite("Debug sessions: instrumented code keeps its meaning")
struct InstrumenterSyntaxTests {
    static let kitchen = #"""
        async function kitchen(input) {
            "use strict";
            const out = [];
            const { a, b: [first, ...rest] = [], ...others } = input;
            out.push(a, first, rest.length, Object.keys(others).join());
            const arrow = (x, y = 2) => x * y;
            const objectArrow = (k) => ({ [k]: k.length });
            out.push(arrow(3), objectArrow("key").key);
            class Shape {
                #side;
                static count = 0;
                constructor(side) { this.#side = side; Shape.count++; }
                get area() { return this.#side ** 2; }
                scaled(f) { return new Shape(this.#side * f); }
            }
            class Square extends Shape {
                constructor(side) { super(side); this.kind = "square"; }
                describe() { return `${this.kind} ${this.area}`; }
            }
            out.push(new Square(3).describe(), new Shape(2).scaled(2).area, Shape.count);
            function* gen(n) { for (let i = 0; i < n; i++) yield i * i; }
            out.push([...gen(4)].join("/"));
            outer: for (const row of [[1, 2], [3, 4]]) {
                for (const cell of row) {
                    if (cell === 3) continue outer;
                    if (cell === 4) break outer;
                    out.push(cell);
                }
            }
            for (const key in { p: 1, q: 2 }) out.push(key);
            let k = 0;
            do k++; while (k < 3);
            while (k < 5) k++;
            out.push(k);
            switch (k) {
                case 4: out.push("four"); break;
                case 5: { let five = "five"; out.push(five); }
                default: out.push("fell");
            }
            if (k > 4) out.push("big"); else out.push("small");
            try { null.x; } catch { out.push("caught"); } finally { out.push("finally"); }
            try { throw new TypeError("t"); } catch ({ message }) { out.push(message); }
            const label = k > 4 ? "yes" : "no";
            out.push(label, typeof undeclared, void 0 ?? "nullish", [1, 2, 3].map(x => x + 1).join(), [3, 1, 2].sort((x, y) => x - y)[0]);
            const waited = await Promise.all([1, 2].map(async (v) => { await null; return v * 10; }));
            out.push(waited.join(), await (async () => "inner")());
            for await (const v of (async function* () { yield 1; yield 2; })()) out.push(v);
            const tagged = ((s, ...v) => s.raw.join("|") + v.join())`a${1}b${2}c`;
            out.push(tagged, (function () { return arguments.length; })(1, 2, 3));
            return out;
        }
        """#

    /// The kitchen with a function declared twice at the top of its body: its frame is plain
    /// (no `try` around the body), and it means the same.
    static let plainKitchen = kitchen.replacingOccurrences(
        of: "    const out = [];\n", with: "    const out = [];\n    function twice() { return 1; }\n    function twice() { return 2; }\n")

    @Test(arguments: [false, true])
    func aMacroUsingMostOfTheLanguageMeansTheSameInASession(plainFrame: Bool) async throws {
        let dir = TemporaryDirectory(prefix: "macro-debug-syntax")
        let source = plainFrame ? Self.plainKitchen : Self.kitchen
        #expect(source.contains("twice") == plainFrame)
        try dir.write("kitchen.js", source)
        var logger = Logger(label: "syntax")
        logger.logLevel = .critical
        let input: MacroValue = ["a": 1, "b": [7, 8, 9], "c": true, "d": false]
        let plain = MacroEngine(logger: logger)
        try plain.setMethod(javascript: source, key: "kitchen", file: dir.url("kitchen.js"))
        let expected = try await plain.callFuture("kitchen", arguments: [input]).get()

        let (stream, continuation) = AsyncStream<DebugEvent>.makeStream()
        let session = try DebugSession(options: .init(macro: "kitchen", arguments: [input], directory: dir.path), logger: logger) { continuation.yield($0) }
        session.start()
        var outcome: DebugOutcome?
        for await event in stream { if case .terminated(let o) = event { outcome = o; break } }
        #expect(outcome?.error == nil, "\(outcome?.error?.message ?? "")")
        #expect(outcome?.result == expected)
        #expect(
            expected == [
                1, 7, 2, "c,d", 6, 3, "square 9", 16, 3, "0/1/4/9", 1, 2, "p", "q", 5, "five", "fell", "big", "caught", "finally", "t",
                "yes", "undefined", "nullish", "2,3,4", 1, "10,20", "inner", 1, 2, "a|b|c1,2", 3,
            ])
    }

    @Test func stopsInAClassMethodAGeneratorASwitchCaseAndAnArrowBody() async throws {
        let h = try DebugHarness()
        try h.directory.write("kitchen.js", Self.kitchen)
        try h.launch("kitchen", [["a": 1, "b": [7, 8, 9]]])
        _ = h.session.setBreakpoints(
            path: h.path("kitchen.js"),
            [
                .init(line: 13, column: 22),  // get area() { return ... }
                .init(line: 21, column: 52),  // yield in the generator's loop
                .init(line: 37, column: 19),  // { let five = ...; } in a switch case
                .init(line: 6, column: 33),  // the arrow's expression body
            ])
        h.session.start()
        var seen: [String] = []
        for _ in 0..<4 {
            let stop = try await h.nextStop()
            seen.append(h.position(stop) + " " + (stop["name"].stringValue ?? ""))
            _ = h.session.setBreakpoints(path: h.path("kitchen.js"), [])
            _ = h.session.setBreakpoints(
                path: h.path("kitchen.js"),
                [
                    .init(line: 13, column: 22), .init(line: 21, column: 52), .init(line: 37, column: 19), .init(line: 6, column: 33),
                ].filter { request in !seen.contains { $0.hasPrefix("kitchen.js:\(request.line):") } })
            try await h.session.request("continue")
        }
        #expect(
            seen == [
                "kitchen.js:6:33 breakpoint arrow",
                "kitchen.js:13:22 breakpoint area",
                "kitchen.js:21:52 breakpoint gen",
                "kitchen.js:37:19 breakpoint kitchen",
            ])
        _ = try await h.outcome()
    }
}
