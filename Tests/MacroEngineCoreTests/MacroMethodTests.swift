import MacroEngineCore
import MacroTestSupport
import Testing

@Suite("MacroMethod and setMethod")
struct MacroMethodTests {
    @Test func setMethodRegistersAGlobalAndReturnsTheFunction() throws {
        let (engine, _, _) = try makeEngine()
        let function = try engine.setMethod(javascript: "function(a, b) { return a * b }", key: "times")
        #expect(try function.call(6, 7) == 42)
        #expect(try engine.evaluate("times(2, 3)") == 6)
        #expect(function.name == "times")
    }

    @Test func changingTheSourceReRegisters() throws {
        let (engine, _, _) = try makeEngine()
        let method = MacroMethod(javascript: "function() { return 1 }", key: "value", engine: engine)
        #expect(method.version == 1)
        #expect(try method.call() == 1)
        method.javascript = "function() { return 2 }"
        #expect(method.version == 2)
        #expect(try method.call() == 2)
        #expect(try engine.call("value") == 2)
    }

    @Test func aBrokenChangeKeepsThePreviousVersionLive() throws {
        let (engine, _, errors) = try makeEngine()
        let method = MacroMethod(javascript: "function() { return 'good' }", key: "m", file: "m.js", engine: engine)
        let error = try #require(throws: MacroError.self) { try method.update(javascript: "function() {\n  return ;;(\n}") }
        #expect(error.code == .syntax)
        #expect(error.file == "m.js")
        #expect(error.line == 3)
        #expect(error.column == 1)
        #expect(method.lastError == error)
        #expect(method.javascript == "function() {\n  return ;;(\n}")
        #expect(method.version == 1)
        #expect(try method.call() == "good")
        #expect(try engine.call("m") == "good")
        #expect(errors.recorded.map(\.code) == [.syntax])
    }

    @Test func invalidKeysAreRefused() throws {
        let (engine, _, _) = try makeEngine()
        for key in ["1abc", "has-dash", "function", "", "a.b"] {
            let error = try #require(throws: MacroError.self) { try engine.setMethod(javascript: "function() {}", key: key) }
            #expect(error.code == .invalidName, "\(key)")
        }
        for key in ["Math", "progress", "setInnerProgress", "JSON", "Object"] {
            let error = try #require(throws: MacroError.self) { try engine.setMethod(javascript: "function() {}", key: key) }
            #expect(error.message == "'\(key)' would shadow the engine global '\(key)'; rename the file")
        }
    }

    @Test func aMethodWhoseFirstSourceIsBrokenThrowsItsLoadError() throws {
        let (engine, _, _) = try makeEngine()
        let method = MacroMethod(javascript: "42", key: "num", file: "num.js", engine: engine)
        #expect(!method.isLoaded)
        let error = try #require(throws: MacroError.self) { try method.call() }
        #expect(error.code == .notAFunction)
        #expect(error.line == 1)
        #expect(error.column == 1)
    }

    @Test func aFileWithAStatementAfterItsFunctionSaysWhereAndWhatToDo() throws {
        let (engine, _, _) = try makeEngine()
        let sources = [
            "function nat() {\n    return helper(1);\n}\nfunction helper(x) {\n    return x;\n}\n",
            "function nat() {\n    return obj.method(1);\n}\n\nvar obj = {};\n",
        ]
        for (source, line) in zip(sources, [4, 5]) {
            let error = try #require(throws: MacroError.self) { try engine.setMethod(javascript: source, key: "nat") }
            #expect(error.code == .notAFunction)
            #expect(error.errorName == nil)
            #expect(
                error.message
                    == "a macro file holds one function, named like the file, and nothing after it; line \(line) starts another statement. Move helpers to macros/lib/: a plain script there is seen by every macro, a module is imported (`import { helper } from \"./lib/NAME.js\"`)"
            )
            #expect(error.line == line)
            #expect(error.column == 1)
        }
        // A real syntax error in such a file stays a syntax error.
        let broken = try #require(throws: MacroError.self) { try engine.setMethod(javascript: "function nat() {\n  return 1 *;\n}\nvar x;\n", key: "nat") }
        #expect(broken.code == .syntax)
    }

    struct Greeter: MacroEngineSupport {
        let greeting: String
        func addMacroSupport(engine: MacroEngine) throws {
            try engine.register("greet", values: { args in .string("\(greeting), \(args.first?.stringValue ?? "?")") })
        }
    }

    @Test func servicesPublishThemselvesThroughMacroEngineSupport() throws {
        let (engine, _, _) = try makeEngine()
        try engine.add(Greeter(greeting: "Hello"))
        #expect(try engine.evaluate("greet('macro')") == "Hello, macro")
    }
}
