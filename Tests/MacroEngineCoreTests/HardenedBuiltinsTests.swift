import MacroEngineCore
import MacroTestSupport
import Testing

/// The built-ins are frozen before any macro runs (harden_builtins).
@Suite("Hardened built-ins")
struct HardenedBuiltinsTests {
    @Test(arguments: [
        ("Array.prototype.map = null", "Cannot assign to read only property 'map' of Array.prototype"),
        ("JSON.stringify = function () { return 'x' }", "Cannot assign to read only property 'stringify' of JSON"),
        ("Math.random = function () { return 4 }", "Cannot assign to read only property 'random' of Math"),
        ("Object.prototype.toString = null", "Cannot assign to read only property 'toString' of Object.prototype"),
        ("Promise.prototype.then = null", "Cannot assign to read only property 'then' of Promise.prototype"),
        ("Uint8Array.prototype.fill = null", "Cannot assign to read only property 'fill' of Uint8Array.prototype"),
        ("Error.prototype.message = 'x'", "Cannot assign to read only property 'message' of Error.prototype"),
    ])
    func changingABuiltInIsATypeErrorNamingIt(_ source: String, _ expected: String) throws {
        let (engine, _, _) = try makeEngine()
        try engine.evaluate("function tamper() { \(source) }")
        let error = try #require(throws: MacroError.self) { try engine.call("tamper") }
        #expect(error.errorName == "TypeError")
        #expect(error.message.hasPrefix(expected))
        // Nothing changed for the next macro.
        #expect(
            try engine.evaluate("[1, 2].map(function (x) { return x * 2 }).concat(typeof Math.random(), JSON.stringify({a: 1}))")
                == [2, 4, "number", "{\"a\":1}"])
    }

    /// The engine's own functions and objects are hardened as the built-ins are: one macro's
    /// tampering is refused, and the next macro's turn runs none of its code.
    @Test(arguments: [
        ("Object.defineProperty(sleep, 'call', { value: function () { progress.outer = 9 } })", "Attempting to define property on object that is not extensible"),
        ("console.log.bind = function () { progress.outer = 9 }", "Cannot assign to read only property 'bind' of console.log"),
        ("Object.setPrototypeOf(setInnerProgress, null)", "Attempted to assign to readonly property"),
        ("clearTimeout.call = null", "Cannot assign to read only property 'call' of clearTimeout"),
        ("Object.defineProperty(progress, 'inner', { get() { return 9 } })", "Attempting to change the getter of an unconfigurable property"),
        ("setTimeout.extra = 1; 'use strict'; Object.defineProperty(setTimeout, 'x', { value: 1 })", "Attempting to define property on object that is not extensible"),
    ])
    func theEnginesNativesAreFrozenForEveryMacro(_ source: String, _ expected: String) throws {
        let (engine, _, _) = try makeEngine()
        try engine.evaluate("function tamper() { \(source) }")
        let error = try #require(throws: MacroError.self) { try engine.call("tamper") }
        #expect(error.errorName == "TypeError")
        #expect(error.message.hasPrefix(expected), "\(error.message)")
        #expect(
            try engine.evaluate("setInnerProgress.bind(null)(3); typeof console.log.bind(console) + ' ' + progress.outer + ' ' + progress.inner")
                == "function 0 3")
    }

    /// The hidden intrinsics (iterator prototypes no property names) were
    /// writable (WebAssembly's too, which macros no longer have: `EngineShapesTests`): one macro setting two of them to null broke other macros'
    /// `[..."abc"]`, `Array.from`, `matchAll` and for-of over Maps until the next restart.
    @Test(arguments: [
        "Object.getPrototypeOf(''[Symbol.iterator]()).next = null",
        "Object.getPrototypeOf(new Map()[Symbol.iterator]()).next = null",
        "Object.getPrototypeOf(new Set()[Symbol.iterator]()).next = null",
        "Object.getPrototypeOf(/a/[Symbol.matchAll]('a')).next = null",
        "Object.getPrototypeOf(Object.getPrototypeOf(async function* () {}).prototype)[Symbol.asyncIterator] = null",
    ])
    func hiddenIntrinsicsAreFrozenToo(_ source: String) throws {
        let (engine, _, _) = try makeEngine()
        try engine.evaluate("function tamper() { \(source) }")
        let error = try #require(throws: MacroError.self) { try engine.call("tamper") }
        #expect(error.errorName == "TypeError", "\(error)")
        #expect(error.message.hasPrefix("Cannot assign to read only property"), "\(error.message)")
        #expect(
            try engine.evaluate(
                """
                (function () {
                  var m = new Map([[1, 2]]), out = [];
                  for (var [k, v] of m) out.push(k + v);
                  for (var x of new Set([4])) out.push(x);
                  return [[..."ab"].length, Array.from("xyz").length, [..."a1b2".matchAll(/\\d/g)].length, out.join(",")];
                })()
                """) == [2, 3, 2, "3,4"])
    }

    @Test func freezingDoesNotBreakOrdinaryCode() throws {
        let (engine, _, _) = try makeEngine()
        // The override mistake: an ordinary object may still get its own toString, constructor, name...
        let result = try engine.evaluate(
            """
            (function () {
              var o = {}; o.toString = function () { return "mine" };
              var e = new Error("boom"); e.name = "MyError";
              class A { toString() { return "A" } }
              class B extends A { constructor() { super(); this.constructor = 5 } }
              function F() {} F.prototype.valueOf = function () { return 42 };
              var copy = Object.assign({}, {a: 1}, {b: 2});
              var spread = [...[1, 2], ...new Set([3])];
              return [String(o), String(e), String(new A()), new B().constructor, +new F(), copy.b, spread.length,
                      [3, 1, 2].sort().join(""), Array.from({length: 2}, function (_, i) { return i }).join(",")];
            })()
            """)
        #expect(result == ["mine", "MyError: boom", "A", 5, 42, 2, 3, "123", "0,1"])
    }

    @Test func aMacroCannotReplaceAGlobalBuiltIn() throws {
        let (engine, _, _) = try makeEngine()
        try engine.evaluate("function swap() { JSON = { stringify: function () { return 'x' } }; Math = null }")
        _ = try? engine.call("swap")
        #expect(try engine.evaluate("JSON.stringify([1]) + typeof Math") == "[1]object")
        // Frozen in the language's own sense, and nothing can be added for the other macros.
        #expect(try engine.evaluate("[Array.prototype, Object.prototype, Math, JSON, Promise.prototype].every(Object.isFrozen)") == true)
        try engine.evaluate("function add() { 'use strict'; Array.prototype.myHelper = 1 }")
        let error = try #require(throws: MacroError.self) { try engine.call("add") }
        #expect(error.errorName == "TypeError")
        #expect(try engine.evaluate("typeof [].myHelper") == "undefined")
    }

    /// A macro could reassign another macro's global (`globalThis.bump = 1`), and every macro
    /// calling `bump()` by name broke until its file reloaded; or a lib helper, so that other
    /// macros ran its code in their calls. A macro's name and a lib file's top-level names are
    /// the engine's: assigning, deleting or redefining them fails, naming them; a reload swaps
    /// what is behind them.
    @Test func noMacroCanReplaceAnotherMacroOrALibGlobal() throws {
        let (engine, _, _) = try makeEngine()
        try engine.setMethod(javascript: "function bump() { return 1 }", key: "bump")
        try engine.evaluateLibrary("function helper() { return 'lib' }", file: "/m/lib/h.js")
        try engine.setMethod(
            javascript: """
                function tamper() {
                  var out = [];
                  try { globalThis.bump = 5 } catch (e) { out.push(e.name + ": " + e.message) }
                  try { bump = 6 } catch (e) { out.push(e.name) }
                  out.push(delete globalThis.bump);
                  try { Object.defineProperty(globalThis, "bump", { value: 7 }) } catch (e) { out.push(e.name) }
                  try { helper = function () { return "mine" } } catch (e) { out.push(e.name + ": " + e.message) }
                  try { Object.defineProperty(globalThis, "helper", { value: 7 }) } catch (e) { out.push(e.name) }
                  out.push(delete globalThis.helper);
                  out.push(bump(), helper());
                  return out;
                }
                """, key: "tamper")
        #expect(
            try engine.call("tamper") == [
                "TypeError: Cannot assign to read only property 'bump' of the global object: it is the macro bump, which no other code may replace",
                "TypeError", false, "TypeError",
                "TypeError: Cannot assign to 'helper': it is declared by lib/h.js, shared by every macro, and only that file changes it",
                "TypeError", false, 1, "lib",
            ])
        try engine.setMethod(javascript: "function bump() { return 2 }", key: "bump")
        #expect(try engine.evaluate("bump()") == 2)
        try engine.removeMethod(key: "bump")
        #expect(try engine.evaluate("typeof bump") == "undefined")
        try engine.setMethod(javascript: "function bump() { return 3 }", key: "bump")
        #expect(try engine.evaluate("bump()") == 3)
        // A lib file that declares a macro's name: one of the two must be renamed.
        try engine.evaluateLibrary("function clash() { return 'lib' }", file: "/m/lib/c.js")
        let error = try #require(throws: MacroError.self) { try engine.setMethod(javascript: "function clash() { return 1 }", key: "clash") }
        #expect(error.message == "'clash' is already a global of a lib file; rename the macro or the lib's declaration")
    }

    @Test func hardeningCanBeSwitchedOff() throws {
        let engine = MacroEngine(configuration: .init(hardenBuiltins: false), logger: silentLogger)
        try engine.evaluate("Array.prototype.double = function () { return this.map(function (x) { return x * 2 }) }")
        #expect(try engine.evaluate("[1, 2].double()") == [2, 4])
        #expect(try engine.evaluate("Object.isFrozen(Array.prototype)") == false)
    }

    @Test func theShippedMacrosAndLibFilesRunHardened() throws {
        let (engine, model, _) = try makeEngine()
        let library = MacroLibrary(directory: repositoryRoot + "/macros", engine: engine, logger: silentLogger)
        let entries = try library.reload()
        #expect(entries.filter { $0.status == .error }.map(\.name) == [])
        #expect(library.libEntries.filter { $0.status == .error }.map(\.name) == [])
        try library.call("random")
        #expect(model.valuesByName.values.allSatisfy { $0 > 0 })
    }
}

/// The TypeError of a frozen built-in is thrown by the engine's own setter: its position must
/// still be the macro's line and column, not the helper's.
@Suite("Hardened built-ins: positions")
struct HardenedBuiltinPositionTests {
    @Test func theErrorPointsAtTheAssignmentInTheMacroFile() throws {
        let dir = TemporaryDirectory(prefix: "hardened")
        try dir.write("macros/tamper.js", "function () {\n  let a = 1;\n  Array.prototype.map = function () { return 'hacked' };\n}\n")
        let (engine, _, _) = try makeEngine()
        let library = MacroLibrary(directory: dir.url("macros"), engine: engine, logger: silentLogger)
        _ = try library.reload()
        let error = try #require(throws: MacroError.self) { try library.callFuture("tamper").wait() }
        #expect(error.errorName == "TypeError")
        #expect(error.file == dir.url("macros") + "/tamper.js")
        #expect(error.line == 3)
        #expect(error.stack?.hasPrefix("tamper@\(dir.url("macros"))/tamper.js:3:") == true)
        #expect(error.column.map { error.stack?.hasPrefix("tamper@\(dir.url("macros"))/tamper.js:3:\($0)") == true } == true)
    }
}

/// JavaScriptCore keeps `Error.stackTraceLimit` for the whole context and sets it from any
/// assignment or `delete`, even one the hardened built-ins refuse: one macro's
/// `Error.stackTraceLimit = 0` left every later error of every other macro without a stack or a
/// position. The limit is put back when the tampering entry ends (for a `delete`, which nothing
/// sees, once an error comes without a stack: only that one error lacks it).
@Suite("Hardened built-ins: the stack-trace limit")
struct StackTraceLimitTests {
    static let tampering = [
        "Error.stackTraceLimit = 0",
        "Reflect.set(Error, 'stackTraceLimit', 0)",
        "Error.stackTraceLimit = 'none'",
        "Error.stackTraceLimit = -1",
        // Another receiver: JavaScriptCore sets the limit all the same.
        "Reflect.set(Error, 'stackTraceLimit', 0, {})",
        "class X extends Error { static f() { super.stackTraceLimit = 0 } }; X.f()",
    ]

    private static func library(tampering: String) throws -> (MacroLibrary, TemporaryDirectory) {
        let dir = TemporaryDirectory(prefix: "stack-limit")
        try dir.write("macros/tamper.js", "function tamper() {\n  try { \(tampering) } catch (e) { return e.name }\n  return 'quiet'\n}\n")
        try dir.write("macros/boom.js", "function boom() {\n  function inner() { throw new Error('x') }\n  inner();\n}\n")
        let (engine, _, _) = try makeEngine()
        let library = MacroLibrary(directory: dir.url("macros"), engine: engine, logger: silentLogger)
        _ = try library.reload()
        return (library, dir)
    }

    @Test(arguments: tampering)
    func anotherMacrosErrorKeepsItsStackAfterATamperingMacro(_ tampering: String) throws {
        let (library, dir) = try Self.library(tampering: tampering)
        // Refused (TypeError) on Error itself; on another receiver the property lands there.
        #expect(["TypeError", "quiet"].contains(try library.callFuture("tamper").wait().stringValue ?? ""))
        let error = try #require(throws: MacroError.self) { try library.callFuture("boom").wait() }
        let file = dir.url("macros") + "/boom.js"
        #expect(error.file == file)
        #expect(error.line == 2 && error.column == 37)
        #expect(error.stack == "inner@\(file):2:37\nboom@\(file):3:3", "\(error)")
    }

    @Test func aDeleteCostsOneErrorItsStackAndNoMore() throws {
        let (library, dir) = try Self.library(tampering: "delete Error.stackTraceLimit")
        #expect(try library.callFuture("tamper").wait() == "quiet")
        let first = try #require(throws: MacroError.self) { try library.callFuture("boom").wait() }
        #expect(first.stack == nil)
        let second = try #require(throws: MacroError.self) { try library.callFuture("boom").wait() }
        let file = dir.url("macros") + "/boom.js"
        #expect(second.stack == "inner@\(file):2:37\nboom@\(file):3:3", "\(second)")
    }
}
