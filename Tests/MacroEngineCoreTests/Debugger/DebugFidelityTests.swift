import Foundation
import Logging
import MacroEngineCore
import MacroTestSupport
import Testing

/// A debugged run behaves like the real run: each macro here gives the same
/// outcome in a debug session as in the live engine, given the same files.
@Suite("Debug sessions: a debugged run behaves like the live run")
struct DebugFidelityTests {
    private static var logger: Logger {
        var logger = Logger(label: "debug-fidelity")
        logger.logLevel = .critical
        return logger
    }

    /// The macro's outcome in a live engine loaded with `files` (lib files first, in name order).
    private static func live(_ files: [String: String], _ macro: String, evalEnabled: Bool = false) async -> Result<MacroValue, MacroError> {
        let directory = TemporaryDirectory(prefix: "fidelity-live")
        // Generous limits: these tests are about meaning, not time, and the machine may be busy.
        let engine = MacroEngine(configuration: .init(timeLimit: .seconds(60), callDeadline: .seconds(60), evalEnabled: evalEnabled), logger: logger)
        engine.exceptionHandler = { _ in }
        do {
            for (path, text) in files.sorted(by: { $0.key < $1.key }) where path.hasPrefix("lib/") {
                try directory.write(path, text)
                try engine.evaluateLibrary(text, file: directory.url(path))
            }
            for (path, text) in files where !path.hasPrefix("lib/") {
                try directory.write(path, text)
                try engine.setMethod(javascript: text, key: String(path.dropLast(3)), file: directory.url(path))
            }
            return .success(try await engine.callFuture(macro).get())
        } catch let error as MacroError {
            return .failure(error)
        } catch {
            return .failure(MacroError(code: .threw, message: "\(error)"))
        }
    }

    /// A session on `files`, launched (not started), with its events.
    private static func session(
        _ files: [String: String], _ macro: String, _ arguments: [MacroValue] = [], configure: (inout DebugSession.Options) -> Void = { _ in }
    ) throws -> (DebugSession, AsyncStream<DebugEvent>, TemporaryDirectory) {
        let directory = TemporaryDirectory(prefix: "fidelity-debug")
        for (path, text) in files { try directory.write(path, text) }
        var options = DebugSession.Options(macro: macro, arguments: arguments, directory: directory.path, timeLimit: .seconds(60), callDeadline: .seconds(60))
        configure(&options)
        let (stream, continuation) = AsyncStream<DebugEvent>.makeStream()
        return (try DebugSession(options: options, logger: logger) { continuation.yield($0) }, stream, directory)
    }

    /// The macro's outcome in a debug session on `files`, run without stopping.
    private static func debugged(
        _ files: [String: String], _ macro: String, _ arguments: [MacroValue] = []
    ) async throws -> (
        outcome: DebugOutcome?, skipped: [String]
    ) {
        let (session, events, _) = try session(files, macro, arguments)
        session.start()
        for await event in events { if case .terminated(let outcome) = event { return (outcome, session.skipped.map(\.message)) } }
        return (nil, session.skipped.map(\.message))
    }

    /// Both outcomes agree, and the live one is `expected`.
    private static func expectSame(
        _ files: [String: String], _ macro: String, _ expected: MacroValue, sourceLocation: SourceLocation = #_sourceLocation
    )
        async throws
    {
        let live = await live(files, macro)
        #expect((try? live.get()) == expected, "live: \(live)", sourceLocation: sourceLocation)
        let (outcome, skipped) = try await debugged(files, macro)
        #expect(skipped == [], sourceLocation: sourceLocation)
        #expect(outcome?.error == nil, "debugged: \(outcome?.error?.message ?? "")", sourceLocation: sourceLocation)
        #expect(outcome?.result == expected, sourceLocation: sourceLocation)
    }

    // MARK: 1. Proper tail calls

    @Test func strictTailRecursion200000DeepRunsInASession() async throws {
        let lib = "\"use strict\";\nfunction down(n) { return n === 0 ? 0 : down(n - 1); }\nconst arrowDown = (n) => n === 0 ? \"done\" : arrowDown(n - 1);\n"
        let macro =
            "function deep() {\n    \"use strict\";\n    function f(n, acc) {\n        if (n === 0) return acc;\n        return f(n - 1, acc + 1);\n    }\n    class C { static m(n) { return n === 0 ? \"class\" : C.m(n - 1); } }\n    return [down(200000), arrowDown(200000), f(200000, 0), C.m(200000)];\n}\n"
        let files = ["lib/tail.js": lib, "deep.js": macro]
        let clock = ContinuousClock()
        var start = clock.now
        let live = await Self.live(files, "deep")
        let liveTime = clock.now - start
        #expect((try? live.get()) == [0, "done", 200000, "class"], "\(live)")
        start = clock.now
        let (outcome, skipped) = try await Self.debugged(files, "deep")
        let debuggedTime = clock.now - start
        #expect(skipped == [])
        #expect(outcome?.error == nil, "\(outcome?.error?.message ?? "")")
        #expect(outcome?.result == [0, "done", 200000, "class"])
        print("tail recursion 4 x 200,000 deep: live \(liveTime), debugged (launch included) \(debuggedTime)")
    }

    @Test func steppingStillSeesTheCallerOfANonTailCall() async throws {
        // A strict function with a tail call keeps its frames right for calls that are not in tail position.
        let macro = "function outer() {\n    \"use strict\";\n    function inner(n) {\n        return n + 1;\n    }\n    const v = inner(1) + 1;\n    return inner(v);\n}\n"
        let (session, events, directory) = try Self.session(["outer.js": macro], "outer")
        _ = session.setBreakpoints(path: directory.url("outer.js"), [.init(line: 4)])
        session.start()
        var iterator = events.makeAsyncIterator()
        var stacks: [[String]] = []
        while let event = await iterator.next() {
            if case .terminated(let outcome) = event {
                #expect(outcome.result == 4)
                break
            }
            guard case .stopped = event else { continue }
            let frames = try await session.request("stackTrace")["frames"].arrayValue ?? []
            stacks.append(frames.map { "\($0["name"].stringValue ?? ""):\($0["line"].intValue ?? 0)" })
            try await session.request("continue")
        }
        // The first call is not in tail position: outer is below inner. The second is a tail call:
        // outer's frame is gone, as it is live.
        #expect(stacks == [["inner:4", "outer:6"], ["inner:4"]])
    }

    /// The stack traces at each stop of a session run to its end (continuing after each).
    private static func stacks(
        _ files: [String: String], _ macro: String, file: String, lines: [Int]
    ) async throws -> (
        stacks: [[String]], outcome: DebugOutcome?
    ) {
        let (session, events, directory) = try Self.session(files, macro)
        _ = session.setBreakpoints(path: directory.url(file), lines.map { .init(line: $0) })
        session.start()
        var iterator = events.makeAsyncIterator()
        var stacks: [[String]] = []
        while let event = await iterator.next() {
            if case .terminated(let outcome) = event { return (stacks, outcome) }
            guard case .stopped = event else { continue }
            let frames = try await session.request("stackTrace")["frames"].arrayValue ?? []
            stacks.append(frames.map { "\($0["name"].stringValue ?? ""):\($0["line"].intValue ?? 0)" })
            try await session.request("continue")
        }
        return (stacks, nil)
    }

    @Test func aGeneratorResumedAfterItsCallerRanIsStillOnTheStack() async throws {
        let macro =
            "function gens() {\n    function* g() {\n        yield 1;\n        yield 2;\n    }\n    const it = g();\n    it.next();\n    const a = 1;\n    it.next();\n    return a;\n}\n"
        let (stacks, outcome) = try await Self.stacks(["gens.js": macro], "gens", file: "gens.js", lines: [4])
        #expect(outcome?.result == 1)
        #expect(stacks == [["g:4", "gens:9"]])
    }

    @Test func aPlainFrameEndedByAnExceptionLeavesTheStack() async throws {
        // `helper` has a plain frame (a var and a function of the same name); it throws, and the
        // caller that catches it stops with its own frame on top.
        let macro =
            "function catches() {\n    function helper() {\n        var x;\n        function x() {}\n        null.boom;\n    }\n    try {\n        helper();\n    } catch (e) {\n        const caught = 1;\n    }\n    return 2;\n}\n"
        let (stacks, outcome) = try await Self.stacks(["catches.js": macro], "catches", file: "catches.js", lines: [10, 12])
        #expect(outcome?.result == 2)
        #expect(stacks == [["catches:10"], ["catches:12"]])
    }

    @Test func aReturnInsideATryIsNoTailCallAndKeepsItsCaller() async throws {
        let macro =
            "function guarded() {\n    \"use strict\"; let n = 1;\n    function f(x) {\n        return x * 2;\n    }\n    if (n > 1) return f(n);\n    try {\n        return f(n);\n    } finally {\n        n = 0;\n    }\n}\n"
        let (stacks, outcome) = try await Self.stacks(["guarded.js": macro], "guarded", file: "guarded.js", lines: [4])
        #expect(outcome?.result == 2)
        #expect(stacks == [["f:4", "guarded:8"]])
    }

    @Test func anUncaughtThrowInAPlainFrameStopsWhereItIsThrown() async throws {
        // `check` has a plain frame (a call in tail position, strict); its throw is uncaught.
        let macro =
            "function thrower(n) {\n    \"use strict\";\n    function check(v) {\n        if (v > 2) throw new RangeError(\"too big\");\n        try { if (v > 1) throw new Error(\"caught\"); } catch (e) {}\n        return String(v);\n    }\n    function run(v) {\n        return check(v);\n    }\n    run(2);\n    return run(n);\n}\n"
        let (session, events, _) = try Self.session(["thrower.js": macro], "thrower", [3])
        session.setExceptionBreakpoints(all: false, uncaught: true)
        session.start()
        var iterator = events.makeAsyncIterator()
        var stops: [String] = []
        while let event = await iterator.next() {
            if case .terminated(let outcome) = event {
                #expect(outcome.error?.message == "too big")
                break
            }
            guard case .stopped(let stop) = event else { continue }
            stops.append("\(stop["reason"].stringValue ?? ""):\(stop["line"].intValue ?? 0):\(stop["text"].stringValue ?? "")")
            try await session.request("continue")
        }
        #expect(stops == ["exception:4:RangeError: too big"])
    }

    // MARK: 2. Declarations that a block would refuse

    @Test func aVarAndAFunctionOfTheSameNameAndDuplicateFunctionsAreDebugged() async throws {
        let lib =
            "function shapes() {\n    var x;\n    function x() { return 1; }\n    function g() { return 'first'; }\n    function g() { return 'second'; }\n    return typeof x + ' ' + g();\n}\n"
        let macro = "function dup() {\n    var y = 2;\n    function y() {}\n    function h() { return 1; }\n    function h() { return 2; }\n    return [shapes(), y, h()];\n}\n"
        try await Self.expectSame(["lib/shapes.js": lib, "dup.js": macro], "dup", ["function second", 2, 2])
    }

    // MARK: 3. toString

    @Test func toStringShowsTheOriginalSource() async throws {
        let lib =
            "function helper(a, b = () => 1) {\n    // a comment\n    return a + b();\n}\nclass Box { constructor(v) { this.v = v; } get twice() { return this.v * 2; } static make() { return new Box(1); } }\n"
        let macro = """
            async function show() {
                const arrow = (x) => x * 2;
                const body = async (y) => { await null; return y; };
                const o = { method(z) { return z; }, get g() { return 1; } };
                return [helper.toString(), String(arrow), `${body}`, o.method.toString(), Object.getOwnPropertyDescriptor(o, "g").get.toString(),
                    Box.toString(), Box.make.toString(), show.toString().length, Function.prototype.toString.toString(),
                    Function.prototype.toString.call(Math.max), Function.prototype.toString.name, Function.prototype.toString.length];
            }
            """
        let live = try await Self.live(["lib/helper.js": lib, "show.js": macro], "show").get()
        #expect(live[0] == .string("function helper(a, b = () => 1) {\n    // a comment\n    return a + b();\n}"))
        let (outcome, _) = try await Self.debugged(["lib/helper.js": lib, "show.js": macro], "show")
        #expect(outcome?.error == nil, "\(outcome?.error?.message ?? "")")
        #expect(outcome?.result == live)
    }

    // MARK: 4. The agent is unreachable by name

    @Test func theAgentCannotBeSeenByTypeofGlobalsOrAWithProxy() async throws {
        let macro = """
            function look() {
                const seen = [];
                const spy = new Proxy({}, { has(target, key) { if (typeof key === "string") seen.push(key); return false; } });
                let a = 1;
                with (spy) {
                    a = a + 1;
                    for (let i = 0; i < 2; i++) a += i;
                    (function inner() { return a; })();
                }
                const name = ["__", "dbg"].join("");
                return [typeof globalThis[name], typeof globalThis[name + "_native"], eval("typeof " + name),
                    Object.getOwnPropertyNames(globalThis).filter((n) => n.startsWith("__")).sort().join(), seen.join(), a];
            }
            """
        let files = ["look.js": macro]
        let live = try await Self.live(files, "look", evalEnabled: true).get()
        #expect(live[0] == "undefined")
        #expect(live[4] == "a,a,a,a,a")
        let (session, events, _) = try Self.session(files, "look") { $0.evalEnabled = true }
        session.start()
        var outcome: DebugOutcome?
        for await event in events { if case .terminated(let o) = event { outcome = o; break } }
        #expect(outcome?.error == nil, "\(outcome?.error?.message ?? "")")
        #expect(outcome?.result == live)
    }

    // MARK: 5. Macros with the agent's former names

    @Test(arguments: ["__dbg", "__dbg_native", "__dbg_f"])
    func aMacroNamedLikeTheAgentRunsInASession(_ name: String) async throws {
        let files = ["\(name).js": "function \(name)() { return typeof globalThis['\(name)'] + ' ' + typeof \(name); }", "lib/other.js": "var other = 1;"]
        try await Self.expectSame(files, name, "function function")
    }

    // MARK: 6. A long evaluate

    /// A session of `slow.js` stopped at its line 3, with its events.
    private static func stoppedSlow(evaluateLimit: Duration) async throws -> (DebugSession, AsyncStream<DebugEvent>.Iterator, MacroValue) {
        let macro = "function slow() {\n    let n = 20;\n    n = n + 1;\n    return n * 2;\n}\n"
        let lib = "function forever() {\n    let i = 0;\n    while (true) {\n        try { i++; } catch (e) {}\n    }\n}\n"
        let (session, events, directory) = try Self.session(["slow.js": macro, "lib/forever.js": lib], "slow") {
            $0.timeLimit = .milliseconds(300)
            $0.evaluateLimit = evaluateLimit
        }
        _ = session.setBreakpoints(path: directory.url("slow.js"), [.init(line: 3)])
        session.start()
        var iterator = events.makeAsyncIterator()
        while let event = await iterator.next() {
            if case .stopped(let body) = event { return (session, iterator, body["id"]) }
        }
        throw HarnessError(message: "no stop")
    }

    @Test func aLongEvaluateFailsAloneAndTheSessionGoesOn() async throws {
        var (session, iterator, frame) = try await Self.stoppedSlow(evaluateLimit: .seconds(2))
        // Longer than the time limit (300 ms), shorter than the evaluate's own (2 s): it answers.
        let busy = try await session.request("evaluate", ["expression": "{ const t = Date.now(); while (Date.now() - t < 400) {} n }", "frameId": frame])
        #expect(busy["value"] == "20")
        // Endless, in the expression itself or in a function of the macro's (whose own catch does
        // not keep it going): an error reply to that evaluate only.
        for expression in ["for (;;) {}", "[1].map(() => { while (true) {} })", "forever()"] {
            let clock = ContinuousClock(), start = clock.now
            defer { print("endless evaluate \(expression): answered after \(clock.now - start)") }
            let error = await #expect(throws: DebugError.self) {
                try await session.request("evaluate", ["expression": .string(expression), "frameId": frame])
            }
            #expect(error?.message == "Error: this request was stopped after 2000 ms (a debug session's evaluate limit)", "\(expression)")
        }
        #expect(try await session.request("evaluate", ["expression": "n + 1", "frameId": frame])["value"] == "21")
        try await session.request("next")
        while let event = await iterator.next() {
            if case .stopped = event { break }
        }
        try await session.request("continue")
        var outcome: DebugOutcome?
        while let event = await iterator.next() {
            if case .terminated(let o) = event { outcome = o; break }
        }
        #expect(outcome?.error == nil, "\(outcome?.error?.message ?? "")")
        #expect(outcome?.result == 42)
    }

    @Test func anEvaluateInCodeTheChecksCannotReachEndsTheSessionAtTwiceTheLimit() async throws {
        // Code of the expression's own eval is not instrumented: the watchdog stops it at twice
        // the evaluate limit, and JavaScriptCore's stop ends the session's run.
        var (session, iterator, frame) = try await Self.stoppedSlow(evaluateLimit: .milliseconds(300))
        let error = await #expect(throws: DebugError.self) {
            try await session.request("evaluate", ["expression": "eval('for (;;) {}')", "frameId": frame])
        }
        #expect(error?.message == "this request ran 600 ms in code the debugger cannot interrupt; the session ends")
        var outcome: DebugOutcome?
        while let event = await iterator.next() {
            if case .terminated(let o) = event { outcome = o; break }
        }
        #expect(outcome?.error?.code == .timeout)
    }
}
