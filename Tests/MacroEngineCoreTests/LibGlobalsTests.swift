import Foundation
import MacroEngineCore
import MacroTestSupport
import Testing

/// A lib file's top-level names are shared by every macro and replaced by none: a macro that
/// swapped a helper for its own code made other macros run (and stall on) that code, and the
/// stall was blamed on them.
@Suite("Lib globals")
struct LibGlobalsTests {
    @Test func aMacroCannotSwapALibHelperThatOtherMacrosCall() throws {
        let (engine, _, _) = try makeEngine()
        let dir = TemporaryDirectory()
        try dir.write("lib/h.js", "function helper(n) { return n + 1; }\nconst LIMIT = 3;\nlet calls = 0;\nfunction count() { calls += 1; return calls; }\n")
        try dir.write("fill.js", "function fill() { return [helper(1), helper(2), LIMIT, count()]; }")
        try dir.write(
            "evil.js",
            """
            function evil(how) {
              const stall = async function () { for (;;) await null; };
              if (how === "assign") helper = stall;
              if (how === "global") globalThis.helper = stall;
              if (how === "define") Object.defineProperty(globalThis, "helper", { value: stall });
              if (how === "delete") return delete globalThis.helper;
              if (how === "strict") { "use strict"; LIMIT = 99; }
              return "replaced";
            }
            """)
        let library = MacroLibrary(directory: dir.path, engine: engine, logger: silentLogger)
        try library.reload()
        #expect(try library.call("fill") == [2, 3, 3, 1])
        for how in ["assign", "global", "define", "strict"] {
            let error = try #require(throws: MacroError.self) { try library.call("evil", arguments: [.string(how)]) }
            #expect(error.errorName == "TypeError", "\(how)")
            #expect(error.file == dir.url("evil.js"), "\(how)")
            if how != "define" {
                #expect(error.message.hasSuffix("it is declared by lib/h.js, shared by every macro, and only that file changes it"), "\(how): \(error.message)")
            }
        }
        #expect(try library.call("evil", arguments: ["delete"]) == false)
        // The macro that called the helper is unharmed, and the lib's own state is its own.
        #expect(try library.call("fill") == [2, 3, 3, 2])
        // A reload swaps what is behind the names (a `const` and a `let` too).
        try dir.write("lib/h.js", "function helper(n) { return n * 10; }\nconst LIMIT = 4;\nlet calls = 100;\nfunction count() { calls += 1; return calls; }\n")
        library.refreshLib()
        #expect(library.libEntries.first?.status == .ok)
        #expect(try library.call("fill") == [10, 20, 4, 101])
        // A version that does not run through leaves the names on the previous one.
        try dir.write("lib/h.js", "function helper(n) { return -1; }\nthrow new Error('half way');\n")
        library.refreshLib()
        #expect(library.libEntries.first?.status == .error)
        #expect(try library.call("fill") == [10, 20, 4, 102])
    }
}
