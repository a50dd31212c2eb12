import Foundation
import MacroEngineCore
import MacroTestSupport
import Synchronization
import Testing

@Suite("Engine: evaluation, exceptions, time limit")
struct EngineTests {
    @Test func evaluatesAndReturnsValues() throws {
        let (engine, _, _) = try makeEngine()
        #expect(try engine.evaluate("1 + 2") == 3)
        #expect(try engine.evaluate("'a' + 'b'") == "ab")
        #expect(try engine.evaluate("var x = 1") == .undefined)
    }

    @Test func sharedEngineWorks() throws {
        #expect(try MacroEngine.shared.evaluate("6 * 7") == 42)
    }

    @Test func thrownErrorCarriesMessageNamePositionAndStack() throws {
        let (engine, _, errors) = try makeEngine()
        let source = "var a = 1;\nfunction boom() {\n  throw new RangeError('too far');\n}\nboom();"
        let error = try #require(throws: MacroError.self) { try engine.evaluate(source, file: "/m/boom.js") }
        #expect(error.code == .threw)
        #expect(error.message == "too far")
        #expect(error.errorName == "RangeError")
        #expect(error.file == "/m/boom.js")
        #expect(error.line == 3)
        #expect(error.column == 23)
        #expect(error.stack == "boom@/m/boom.js:3:23\nglobal code@/m/boom.js:5:1")
        #expect(error.description == "/m/boom.js:3:23: error: RangeError: too far")
        // The exception handler saw exactly the thrown error.
        #expect(errors.recorded == [error])
    }

    @Test func throwingANonErrorValue() throws {
        let (engine, _, _) = try makeEngine()
        let error = try #require(throws: MacroError.self) { try engine.evaluate("throw 'plain'") }
        #expect(error.code == .threw)
        #expect(error.message == "plain")
        #expect(error.errorName == nil)
    }

    @Test func syntaxErrorHasLineAndColumn() throws {
        let (engine, _, _) = try makeEngine()
        let error = try #require(throws: MacroError.self) { try engine.evaluate("var a = 1;\nvar b = ;", file: "s.js") }
        #expect(error.code == .syntax)
        #expect(error.errorName == "SyntaxError")
        #expect(error.line == 2)
    }

    @Test func runawayScriptTimesOutAndEngineKeepsWorking() throws {
        let (engine, _, errors) = try makeEngine()
        let error = try #require(throws: MacroError.self) {
            try engine.evaluate("while (true) {}", timeLimit: .milliseconds(200))
        }
        #expect(error.code == .timeout)
        #expect(error.message == "timed out after 200 ms")
        #expect(errors.recorded.map(\.code) == [.timeout])
        // The engine is fine afterwards, with the default limit back in force.
        #expect(try engine.evaluate("for (var i = 0, s = 0; i < 1000; i++) s += i; s") == 499_500)
    }

    @Test func timeoutCannotBeCaughtByTheScript() throws {
        let (engine, _, _) = try makeEngine()
        let error = try #require(throws: MacroError.self) {
            try engine.evaluate("var caught = false; try { while (true) {} } catch (e) { caught = true }", timeLimit: .milliseconds(100))
        }
        #expect(error.code == .timeout)
        #expect(try engine.value(forKey: "caught") == false)
    }

    @Test func evalIsDisabledUnlessConfigured() throws {
        let (engine, _, _) = try makeEngine()
        let error = try #require(throws: MacroError.self) { try engine.evaluate("eval('1 + 1')") }
        #expect(error.errorName == "EvalError")
        #expect(error.message == "eval and new Function are disabled in macros (config: allow_eval)")
        #expect(throws: MacroError.self) { try engine.evaluate("new Function('return 1')()") }

        let (open, _, _) = try makeEngine(evalEnabled: true)
        #expect(try open.evaluate("eval('1 + 1')") == 2)
    }

    @Test func callingAMissingFunction() throws {
        let (engine, _, _) = try makeEngine()
        let error = try #require(throws: MacroError.self) { try engine.call("nothingHere") }
        #expect(error.code == .noSuchMacro)
        #expect(error.message == "no function named 'nothingHere'")
    }

    @Test func asyncPerformDoesNotBlock() async throws {
        let (engine, _, _) = try makeEngine()
        try engine.evaluate("function add(a, b) { return a + b }")
        #expect(try engine.call("add", arguments: [2, 40]) == 42)
    }
}

@Suite("Native functions")
struct NativeFunctionTests {
    @Test func typedClosures() throws {
        let (engine, _, _) = try makeEngine()
        let seen = ErrorRecorderBox()
        try engine.register("twice") { (x: Double) -> Double in x * 2 }
        try engine.register("answer") { () -> Double in 42 }
        try engine.register("remember") { (x: Double) in seen.append(x) }
        #expect(try engine.evaluate("twice(21)") == 42)
        #expect(try engine.evaluate("answer()") == 42)
        try engine.evaluate("remember(1.5); remember(-3)")
        #expect(seen.values == [1.5, -3])
    }

    @Test func nativeFunctionsAreRealFunctions() throws {
        let (engine, _, _) = try makeEngine()
        try engine.register("twice") { (x: Double) -> Double in x * 2 }
        #expect(try engine.evaluate("typeof twice") == "function")
        #expect(try engine.evaluate("twice instanceof Function") == true)
        #expect(try engine.evaluate("twice.name") == "twice")
        #expect(try engine.evaluate("twice.call(null, 4)") == 8)
        #expect(try engine.evaluate("twice.apply(null, [5])") == 10)
        #expect(try engine.evaluate("twice.bind(null, 6)()") == 12)
        #expect(try engine.evaluate("[1, 2, 3].map(twice).join(',')") == "2,4,6")
    }

    @Test func generalFormSeesArgumentsAndBuildsValues() throws {
        let (engine, _, _) = try makeEngine()
        try engine.register(
            "describe",
            function: { args in
                let context = args.first?.context
                let text = args.map(\.typeDescription).joined(separator: "|")
                return context?.string(text) ?? args[0]
            })
        #expect(try engine.evaluate("describe(1, 'a', null, undefined, NaN, {})") == "number 1|string \"a\"|null|undefined|NaN|object")
        try engine.register("sum", values: { args in .number(args.compactMap(\.doubleValue).reduce(0, +)) })
        #expect(try engine.evaluate("sum(1, 2, 3.5)") == 6.5)
    }

    @Test func swiftErrorsBecomeCatchableExceptions() throws {
        struct Plain: Error {}
        let (engine, _, _) = try makeEngine()
        try engine.register("strict") { (x: Double) in _ = x }
        try engine.register("fails", values: { _ in throw Plain() })
        #expect(
            try engine.evaluate("try { strict('x'); 'no' } catch (e) { (e instanceof TypeError) + ':' + e.message }")
                == "true:strict: expected a finite number, got string \"x\"")
        #expect(try engine.evaluate("try { fails(); 'no' } catch (e) { e.constructor.name + ':' + e.message }") == "Error:fails: Plain()")
        // Uncaught, it reaches Swift as a thrown error with the JS position.
        let error = try #require(throws: MacroError.self) { try engine.evaluate("\n  strict()", file: "n.js") }
        #expect(error.errorName == "TypeError")
        #expect(error.message == "strict: expected a finite number, got no argument")
        #expect(error.line == 2)
    }

    @Test func engineGlobalsCannotBeReplacedByMacros() throws {
        let (engine, _, _) = try makeEngine()
        try engine.evaluate("setInnerProgress = 1; progress = 2; delete getInnerProgress")
        #expect(try engine.evaluate("typeof setInnerProgress") == "function")
        #expect(try engine.evaluate("typeof getInnerProgress") == "function")
        #expect(try engine.evaluate("typeof progress") == "object")
        #expect(throws: MacroError.self) { try engine.setValue(1, forKey: "progress") }
    }

    @Test func manyRegistrationsReplaceCleanly() throws {
        let (engine, _, _) = try makeEngine()
        for i in 0..<2000 { try engine.register("f\(i % 10)", values: { _ in .number(Double(i)) }) }
        try engine.evaluate("for (var i = 0; i < 50000; i++) { ({ a: [i] }) }")  // provoke GC of replaced boxes
        #expect(try engine.evaluate("f9()") == 1999)
    }
}

/// A tiny thread-safe list for closures that record what they see.
final class ErrorRecorderBox: Sendable {
    private let storage = Mutex<[Double]>([])
    func append(_ value: Double) { storage.locked { $0.append(value) } }
    var values: [Double] { storage.locked { $0 } }
}
