import Foundation
import MacroEngineCore
import MacroTestSupport
import Testing

/// A cancelled or timed-out call reports where it was, the loop that was
/// running, by line and column, not its function's first line; each caller by its call site.
@Suite("Where a stopped call was")
struct StopLocationTests {
    enum Stop: String, CaseIterable, CustomTestStringConvertible {
        case cancel, timeout
        var testDescription: String { rawValue }
    }

    /// One shape: the files, the macro to call, and what its error must say.
    struct Shape: CustomTestStringConvertible {
        var name: String
        var files: [String: String]
        var line: Int
        var column: Int
        /// `function@file:line:column`, innermost first; `%` is the directory.
        var stack: [String]
        var testDescription: String { name }
    }

    static let shapes: [Shape] = [
        Shape(
            name: "while (true) {}", files: ["spin.js": "function () {\n  var n = 0;\n  while (true) {}\n}\n"],
            line: 3, column: 3, stack: ["spin@%/spin.js:3:3"]),
        Shape(
            name: "for (;;) { x++ }", files: ["spin.js": "function () {\n  var x = 0;\n  progress.inner = 1;\n  for (;;) { x++ }\n}\n"],
            line: 4, column: 3, stack: ["spin@%/spin.js:4:3"]),
        Shape(
            name: "a loop in a nested helper",
            files: ["spin.js": "function () {\n  function helper(step) {\n    let x = 0;\n      while (true) { x += step }\n  }\n  var a = 1;\n  helper(a);\n}\n"],
            line: 4, column: 7, stack: ["helper@%/spin.js:4:7", "spin@%/spin.js:7:3"]),
        Shape(
            name: "a loop in a lib helper",
            files: [
                "lib/forever.js": "// a helper every macro sees\nfunction forever() {\n  let i = 0;\n  do { i++ } while (true)\n}\n",
                "spin.js": "function () {\n  let before = 1;\n  return before + forever();\n}\n",
            ],
            line: 4, column: 3, stack: ["forever@%/lib/forever.js:4:3", "spin@%/spin.js:3:19"]),
        Shape(
            name: "an async macro's loop after an await",
            files: ["spin.js": "async function () {\n  await null;\n  let i = 0;\n  for (;;) { i += 2 }\n}\n"],
            line: 4, column: 3, stack: ["spin@%/spin.js:4:3"]),
        Shape(
            name: "a getter's loop",
            files: ["spin.js": "function () {\n  const o = { get v() { while (true) {} } };\n  return o.v;\n}\n"],
            line: 2, column: 25, stack: ["v@%/spin.js:2:25", "spin@%/spin.js:3:11"]),
        Shape(
            name: "after Error.stackTraceLimit = 0",
            files: ["spin.js": "function () {\n  try { Error.stackTraceLimit = 0 } catch (e) {}\n  let x = 0;\n  while (true) { x++ }\n}\n"],
            line: 4, column: 3, stack: ["spin@%/spin.js:4:3"]),
        Shape(
            name: "a loop on the file's first line",
            files: ["spin.js": "function () { let i = 0; while (true) { i++ } }\n"],
            line: 1, column: 26, stack: ["spin@%/spin.js:1:26"]),
    ]

    @Test(arguments: shapes, Stop.allCases)
    func theErrorPointsAtTheRunningLoopAndEachCallSite(_ shape: Shape, _ stop: Stop) throws {
        let (engine, _, _) = try makeEngine(timeLimit: stop == .timeout ? .milliseconds(150) : .seconds(60))
        let dir = TemporaryDirectory(prefix: "stoploc")
        for (path, text) in shape.files { try dir.write(path, text) }
        let library = MacroLibrary(directory: dir.path, engine: engine, logger: silentLogger)
        let entries = try library.reload()
        #expect(entries.first { $0.name == "spin" }?.status == .ok)
        let future = library.callFuture("spin", deadline: .seconds(60))
        if stop == .cancel {
            let call = try Self.running(engine, "spin")
            #expect(engine.cancel(call: call.id))
        }
        let error = try #require(throws: MacroError.self) { try future.wait() }
        #expect(error.code == (stop == .cancel ? .cancelled : .timeout))
        let first = try #require(shape.stack.first)
        let file = String(first[first.index(after: first.firstIndex(of: "@")!)...]).replacingOccurrences(of: "%", with: dir.path)
        #expect(error.file == String(file.split(separator: ":")[0]))
        #expect(error.line == shape.line)
        #expect(error.column == shape.column)
        #expect(error.stack == shape.stack.map { $0.replacingOccurrences(of: "%", with: dir.path) }.joined(separator: "\n"))
        #expect(try engine.evaluate("1 + 1") == 2)
    }

    /// A function whose loop can end (or that has two loops) cannot say which of its statements
    /// was running when the trap came (JavaScriptCore also checks at the function's entry): the
    /// location is the function's own start, not a guess at a loop.
    @Test(arguments: Stop.allCases)
    func aFunctionWhoseLoopCanEndIsLocatedByItsStart(_ stop: Stop) throws {
        let (engine, _, _) = try makeEngine(timeLimit: stop == .timeout ? .milliseconds(150) : .seconds(60))
        let dir = TemporaryDirectory(prefix: "stoploc")
        try dir.write(
            "spin.js",
            """
            function () {
              var o = { p: 1 };
              o.p;
              function step(n) {
                let s = 0;
                for (let i = 0; i < n; i++) s += i;
                return s;
              }
              for (;;) { step(3) }
            }

            """)
        let library = MacroLibrary(directory: dir.path, engine: engine, logger: silentLogger)
        _ = try library.reload()
        let future = library.callFuture("spin", deadline: .seconds(60))
        if stop == .cancel { #expect(engine.cancel(call: try Self.running(engine, "spin").id)) }
        let error = try #require(throws: MacroError.self) { try future.wait() }
        #expect(error.code == (stop == .cancel ? .cancelled : .timeout))
        let frames = error.stack?.split(separator: "\n").map(String.init) ?? []
        // Stopped in `step` (its entry or its loop: neither is known), or in the endless loop.
        if frames.first?.hasPrefix("step@") == true {
            #expect(error.line == 4)
            #expect(error.column == 3)
            #expect(frames == ["step@\(dir.url("spin.js")):4:3", "spin@\(dir.url("spin.js")):9:14"])
        } else {
            #expect(error.line == 9)
            #expect(error.column == 3)
            #expect(frames == ["spin@\(dir.url("spin.js")):9:3"])
        }
    }

    /// The loop runs in a later turn, resumed by a timer (`await sleep(1)`): the stop of that
    /// turn ends the call at once, with the loop's position (before, the call hung until its
    /// deadline and then failed with no position: its continuation had been stopped).
    @Test(arguments: Stop.allCases)
    func anAsyncMacrosLoopAfterASleepIsLocatedAndEndsTheCall(_ stop: Stop) throws {
        let (engine, _, _) = try makeEngine(timeLimit: stop == .timeout ? .milliseconds(150) : .seconds(60))
        let looping = DispatchSemaphore(value: 0)
        engine.consoleHandler = { if $0.message == "looping" { looping.signal() } }
        let dir = TemporaryDirectory(prefix: "stoploc")
        try dir.write("spin.js", "async function () {\n  await sleep(1);\n  console.log(\"looping\");\n  let i = 0;\n  while (true) { i += 2 }\n}\n")
        let library = MacroLibrary(directory: dir.path, engine: engine, logger: silentLogger)
        _ = try library.reload()
        let started = Date()
        let future = library.callFuture("spin", deadline: .seconds(60))
        #expect(looping.wait(timeout: .now() + 10) == .success)
        if stop == .cancel { #expect(engine.cancel(call: try Self.running(engine, "spin").id)) }
        let error = try #require(throws: MacroError.self) { try future.wait() }
        #expect(Date().timeIntervalSince(started) < 10)
        #expect(error.code == (stop == .cancel ? .cancelled : .timeout))
        #expect(error.message == (stop == .cancel ? "cancelled" : "timed out after 150 ms"))
        #expect(error.line == 5)
        #expect(error.column == 3)
        #expect(error.stack == "spin@\(dir.url("spin.js")):5:3")
        #expect(engine.runningCalls.isEmpty)
    }

    /// The call of `name` once the engine lists it (5 s at most). Asked, not announced: the
    /// shapes' sources are what is located, so none of them says it runs (a console line would
    /// move the positions checked).
    static func running(_ engine: MacroEngine, _ name: String) throws -> RunningCall {
        guard let call = eventually(timeout: .seconds(5), { engine.runningCalls.first { $0.macro == name } }) else {
            throw MacroError(code: .noSuchMacro, message: "\(name) never showed up as running")
        }
        return call
    }
}
