import Foundation
import MacroEngineCore
import MacroTestSupport
import Testing

/// Guarantee 9 (README, Reliability): macro files, arguments and state files that try to break
/// the engine get a clear error naming what was wrong, and nothing else is affected.
@Suite("Hostile input: files, names, arguments, state")
struct HostileInputTests {
    func library(_ dir: TemporaryDirectory) throws -> (MacroLibrary, MacroEngine) {
        let (engine, _, _) = try makeEngine()
        return (MacroLibrary(directory: dir.path, engine: engine, logger: silentLogger), engine)
    }

    @Test func tenThousandFilesAllLoad() throws {
        let dir = TemporaryDirectory()
        for i in 0..<10_000 { try dir.write("m\(i).js", "function () { return \(i); }") }
        let (library, _) = try library(dir)
        let entries = try library.reload()
        #expect(entries.count == 10_000)
        #expect(entries.allSatisfy { $0.status == .ok })
        #expect(try library.call("m9999") == 9999)
        #expect(try library.call("m0") == 0)
    }

    @Test func aTenMegabyteFileIsRefusedWithItsSize() throws {
        let dir = TemporaryDirectory()
        try dir.write("huge.js", "function() { return 1 }\n//" + String(repeating: "x", count: 10 << 20))
        try dir.write("fine.js", "function() { return 2 }")
        let (library, _) = try library(dir)
        let entries = try library.reload()
        let huge = try #require(entries.first { $0.name == "huge" })
        #expect(huge.status == .error)
        #expect(huge.error?.message.hasPrefix("file is 10485786 bytes") == true)
        #expect(try library.call("fine") == 2)
    }

    @Test(arguments: [
        "progress", "console", "sleep", "setInnerProgress", "setTimeout", "Math", "JSON", "Object", "globalThis", "undefined", "eval",
        // These were accepted.
        "__proto__", "toString", "constructor", "hasOwnProperty", "__macroengine_invoke", "valueOf",
    ])
    func aFileNamedLikeAGlobalIsRefusedAndTheGlobalStillWorks(_ name: String) throws {
        let dir = TemporaryDirectory()
        try dir.write("\(name).js", "function() { return 'shadow' }")
        try dir.write("probe.js", "function() { setInnerProgress(2); return [progress.inner, Math.max(1, 3), JSON.stringify({a: 1}), typeof console.log, typeof sleep] }")
        let (library, _) = try library(dir)
        let entries = try library.reload()
        let shadow = try #require(entries.first { $0.name == name })
        #expect(shadow.status == .error)
        #expect(shadow.error?.code == .invalidName)
        #expect(try library.call("probe") == [2, 3, #"{"a":1}"#, "function", "function"])
    }

    @Test func hugeArgumentsAndReturnsRoundTrip() throws {
        let (engine, _, _) = try makeEngine()
        _ = try engine.setMethod(javascript: "function (s, a) { return [s.length, a.length, s + '!'] }", key: "echo")
        let big = String(repeating: "é", count: 1 << 20)
        let array = MacroValue.array((0..<100_000).map { .number(Double($0)) })
        let result = try engine.call("echo", arguments: [.string(big), array])
        #expect(result == [.number(Double(1 << 20)), 100_000, .string(big + "!")])
    }

    @Test(arguments: [
        "function () { const a = {}; a.self = a; return a }",
        "function () { return 10n ** 30n }",
        "function () { return Symbol('s') }",
        "function () { return { f: Symbol.iterator } }",
        "function () { const a = []; a.length = 4e9; return a }",
        "function () { const a = []; a.length = 4194305; return { deep: [a] } }",
    ])
    func unconvertibleReturnsAreClearErrorsAndTheEngineGoesOn(_ source: String) throws {
        let (engine, model, _) = try makeEngine()
        _ = try engine.setMethod(javascript: source, key: "bad")
        _ = try engine.setMethod(javascript: "function () { progress.outer = 4; return 'ok' }", key: "good")
        let error = try #require(throws: MacroError.self) { try engine.call("bad") }
        #expect(error.code == .conversion)
        #expect(try engine.call("good") == "ok")
        #expect(try model.value(of: "outer") == 4)
    }
}

/// Numbers a macro hands to the engine that no Int holds are taken as what they are, never
/// converted blindly (before, each of these stopped the process).
@Suite("Numbers from JavaScript")
struct HostileNumberTests {
    @Test func aThrownObjectsLineAndColumnAreReadOnlyWhenTheyAreWholeNumbersThatFit() throws {
        let (engine, _, _) = try makeEngine()
        for (line, column) in [("1e300", "NaN"), ("-Infinity", "2**70"), ("1.5", "-1e300")] {
            _ = try engine.setMethod(javascript: "function () { throw { message: 'odd', line: \(line), column: \(column) } }", key: "odd")
            let error = try #require(throws: MacroError.self) { try engine.call("odd") }
            #expect(error.code == .threw)
            #expect(error.message == "odd")
        }
        _ = try engine.setMethod(javascript: "function () { throw { message: 'fits', line: 7, column: 3 } }", key: "fits")
        let error = try #require(throws: MacroError.self) { try engine.call("fits") }
        #expect(error.line == 7)
        #expect(error.column == 3)
    }

    @Test func clearingATimerByANumberNoTimerHasDoesNothing() throws {
        let (engine, _, _) = try makeEngine()
        _ = try engine.setMethod(
            javascript: """
                function () {
                  for (const id of [1e300, -1e300, Infinity, NaN, 2**63, 1.5, -0]) { clearTimeout(id); clearInterval(id) }
                  return 'ok'
                }
                """, key: "clear")
        #expect(try engine.call("clear") == "ok")
    }

    @Test func anArrayPastTheBoundIsRefusedBeforeAnythingIsAllocated() throws {
        let (engine, _, _) = try makeEngine()
        _ = try engine.setMethod(javascript: "function () { const a = []; a.length = 4e9; return a }", key: "sparse")
        let error = try #require(throws: MacroError.self) { try engine.call("sparse") }
        #expect(error.message == "cannot convert an array of 4000000000 elements (at value): at most 4194304 leave the engine")
    }
}

/// Guarantee 6: macros get no file, network or process access.
@Suite("Sandbox")
struct SandboxTests {
    @Test func noFileNetworkOrProcessAPIsExist() throws {
        let (engine, _, _) = try makeEngine()
        let names = ["require", "fetch", "XMLHttpRequest", "WebSocket", "process", "Deno", "Bun", "importScripts", "Worker", "readFile", "open", "print", "load", "quit"]
        let types = try engine.evaluate("[\(names.map { "typeof \($0)" }.joined(separator: ", "))]")
        #expect(types == .array(names.map { _ in "undefined" }))
    }

    @Test func dynamicImportCannotLoadFiles() throws {
        let (engine, _, _) = try makeEngine()
        _ = try engine.setMethod(javascript: "async function () { const m = await import('/etc/passwd'); return 'loaded' }", key: "sneak")
        let error = try #require(throws: MacroError.self) { try engine.callFuture("sneak").wait() }
        #expect(error.code == .threw)
    }
}
