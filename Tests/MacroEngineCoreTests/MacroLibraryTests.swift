import Foundation
import MacroEngineCore
import MacroTestSupport
import Synchronization
import Testing

@Suite("Macro files on disk")
struct MacroLibraryTests {
    func library(_ dir: TemporaryDirectory) throws -> (MacroLibrary, ProgressModel, MacroEngine) {
        let (engine, model, _) = try makeEngine()
        return (MacroLibrary(directory: dir.path, engine: engine, logger: silentLogger), model, engine)
    }

    @Test func loadsGoodFilesAndReportsBrokenOnesWithPositions() throws {
        let dir = TemporaryDirectory()
        try dir.write("good.js", "// a leading comment\nfunction() { return 'good' }\n")
        try dir.write("semicolon.js", "function(a) { return a + 1 };\n")
        try dir.write("syntax.js", "function() {\n    var x = ;\n}\n")
        try dir.write("oneline.js", "function() { return 1 +* 2 }")
        try dir.write("truncated.js", "function() {\n  return 1;\n")
        try dir.write("number.js", "/* not a function */\n  42\n")
        try dir.write("binary.js", data: Data("function() {\n  return 'ok\u{00e9}';".utf8) + Data([0xff, 0xfe]) + Data("\n}".utf8))
        try dir.write("Math.js", "function() {}")
        try dir.write("progress.js", "function() {}")
        try dir.write("has-dash.js", "function() {}")
        let (library, _, _) = try library(dir)
        let entries = try library.reload()
        func entry(_ name: String) throws -> MacroEntry { try #require(entries.first { $0.name == name }) }

        #expect(try entry("good").status == .ok)
        #expect(try entry("good").version == 1)
        #expect(try library.call("good") == "good")
        #expect(try library.call("semicolon", arguments: [1]) == 2)

        func position(_ name: String) throws -> String? {
            let error = try #require(try entry(name).error)
            return "\(error.line.map(String.init) ?? "-"):\(error.column.map(String.init) ?? "-") \(error.headline)"
        }
        #expect(try position("syntax") == "2:13 SyntaxError: Unexpected token ';'")
        #expect(try position("oneline") == "1:24 SyntaxError: Unexpected token '*'")
        #expect(try position("truncated") == "2:12 SyntaxError: unexpected end of file (a closing '}' or ')' may be missing)")
        #expect(try position("number") == "2:3 a macro file must hold one function expression, e.g. function() { ... }; this one is a number literal (nothing of it was run)")
        #expect(try position("binary") == "2:16 the file is not valid UTF-8")
        #expect(try entry("Math").error?.code == .invalidName)
        #expect(try entry("progress").error?.message == "'progress' would shadow the engine global 'progress'; rename the file")
        #expect(try entry("has-dash").error?.code == .invalidName)
        #expect(try entry("syntax").error?.file == dir.url("syntax.js"))
        #expect(entries.filter { $0.status == .ok }.map(\.name) == ["good", "semicolon"])
        // A broken file never became a global.
        #expect(try library.engine.evaluate("typeof syntax") == "undefined")
    }

    @Test func ignoresHiddenTemporaryAndOtherFiles() throws {
        let dir = TemporaryDirectory()
        try dir.write("real.js", "function() { return 1 }")
        for name in [".hidden.js", "real.js~", ".real.js.swp", ".#real.js", "#real.js#", "notes.md", "globals.d.ts", "real.js.bak"] {
            try dir.write(name, "this is not javascript (")
        }
        try FileManager.default.createDirectory(atPath: dir.url("lib.js"), withIntermediateDirectories: true)
        let (library, _, _) = try library(dir)
        #expect(try library.reload().map(\.name) == ["real"])
    }

    @Test func macrosCallOneAnother() throws {
        let dir = TemporaryDirectory()
        try dir.write("double.js", "function(x) { return x * 2 }")
        try dir.write("quadruple.js", "function(x) { return double(double(x)) }")
        let (library, _, _) = try library(dir)
        try library.reload()
        #expect(try library.call("quadruple", arguments: [3]) == 12)
    }

    @Test func reloadPicksUpEditsKeepsGoodVersionsAndDropsDeletedFiles() throws {
        let dir = TemporaryDirectory()
        try dir.write("m.js", "function() { return 1 }")
        let (library, _, engine) = try library(dir)
        try library.reload()
        try dir.write("m.js", "function() { return 2 }")
        try library.reload()
        #expect(library.entry(named: "m")?.version == 2)
        #expect(try library.call("m") == 2)

        try dir.write("m.js", "function() { return (")
        try library.reload()
        let broken = try #require(library.entry(named: "m"))
        #expect(broken.status == .error)
        #expect(broken.version == 2)
        #expect(try library.call("m") == 2)  // the last good version stays live

        try dir.write("m.js", "function() { return 3 }")
        try library.reload()
        #expect(library.entry(named: "m")?.status == .ok)
        #expect(library.entry(named: "m")?.version == 3)
        #expect(try library.call("m") == 3)

        try FileManager.default.removeItem(atPath: dir.url("m.js"))
        try library.reload()
        #expect(library.entry(named: "m") == nil)
        #expect(try engine.evaluate("typeof m") == "undefined")
        let error = try #require(throws: MacroError.self) { try library.call("m") }
        #expect(error.code == .noSuchMacro)
    }

    @Test func runtimeErrorsPointIntoTheFileIncludingLineOne() throws {
        let dir = TemporaryDirectory()
        try dir.write("first.js", "function() { null.x }")
        try dir.write("third.js", "// header\nfunction() {\n    undefinedThing();\n}")
        let (library, _, _) = try library(dir)
        try library.reload()
        let first = try #require(throws: MacroError.self) { try library.call("first") }
        #expect(first.location == dir.url("first.js") + ":1:18")
        #expect(first.stack == "first@\(dir.url("first.js")):1:18")
        #expect(first.macro == "first")
        let third = try #require(throws: MacroError.self) { try library.call("third") }
        #expect(third.location == dir.url("third.js") + ":3:19")
        #expect(third.headline == "ReferenceError: Can't find variable: undefinedThing")
        #expect(third.stack == "third@\(dir.url("third.js")):3:19")
    }

    @Test func symlinksMustStayInsideTheDirectory() throws {
        let dir = TemporaryDirectory()
        let outside = TemporaryDirectory()
        try outside.write("secret.js", "function() { return 'outside' }")
        try dir.write("inside.js", "function() { return 'inside' }")
        try FileManager.default.createSymbolicLink(atPath: dir.url("alias.js"), withDestinationPath: dir.url("inside.js"))
        try FileManager.default.createSymbolicLink(atPath: dir.url("escape.js"), withDestinationPath: outside.url("secret.js"))
        let (library, _, _) = try library(dir)
        let entries = try library.reload()
        #expect(try library.call("alias") == "inside")
        #expect(entries.first { $0.name == "escape" }?.status == .error)
        #expect(throws: MacroError.self) { try library.call("escape") }
    }

    /// A lib file symlinked out of the directory was loaded while a macro's was refused.
    @Test func libSymlinksMustStayInsideTheDirectoryToo() throws {
        let dir = TemporaryDirectory()
        let outside = TemporaryDirectory()
        try outside.write("evil.js", "var EVIL = 'outside'\n")
        try dir.write("lib/good.js", "var GOOD = 'inside'\n")
        try FileManager.default.createSymbolicLink(atPath: dir.url("lib/evil.js"), withDestinationPath: outside.url("evil.js"))
        try dir.write("probe.js", "function() { return [typeof EVIL, typeof GOOD] }")
        let (library, _, _) = try library(dir)
        try library.reload()
        let evil = try #require(library.libEntries.first { $0.name == "lib/evil" })
        #expect(evil.status == .error)
        #expect(
            evil.error?.message == "the file is a symlink to \(URL(fileURLWithPath: outside.url("evil.js")).resolvingSymlinksInPath().path), outside the macros directory; skipped")
        #expect(try library.call("probe") == ["undefined", "string"])
    }

    @Test func unknownMacroNamesTheAvailableOnes() throws {
        let dir = TemporaryDirectory()
        try dir.write("a.js", "function() {}")
        try dir.write("b.js", "function() {}")
        let (library, _, _) = try library(dir)
        try library.reload()
        let error = try #require(throws: MacroError.self) { try library.call("c") }
        #expect(error.message == "no macro named 'c' in \(dir.path) (available: a, b)")
    }

    @Test func oversizedFilesAreRefused() throws {
        let dir = TemporaryDirectory()
        try dir.write("big.js", "function() { return 1 }\n//" + String(repeating: "x", count: 1 << 20))
        let (library, _, _) = try library(dir)
        let entry = try #require(try library.reload().first)
        #expect(entry.status == .error)
        #expect(entry.error?.message.hasPrefix("file is 1048602 bytes") == true)
    }

    @Test func libFilesLoadFirstInNameOrderAndABrokenOneKeepsItsPreviousVersion() throws {
        let dir = TemporaryDirectory()
        // b runs after a, so it reads a's global; each file's top-level names are its own.
        try dir.write("lib/b.js", "var order = first.concat('b');\nfunction twice(x) { return x * 2 }")
        try dir.write("lib/a.js", "var first = ['a'];")
        try dir.write("quad.js", "function(x) { return twice(twice(x)) }")
        try dir.write("alsoQuad.js", "function(x) { return twice(x) * 2 }")
        let (library, _, engine) = try library(dir)
        try library.reload()
        #expect(try engine.evaluate("order") == ["a", "b"])
        #expect(try library.call("quad", arguments: [3]) == 12)
        #expect(try library.call("alsoQuad", arguments: [3]) == 12)

        try dir.write("lib/b.js", "function twice(x) { return x * 2 + (")
        library.refreshLib()
        let broken = try #require(library.libEntries.first { $0.name == "lib/b" })
        #expect(broken.status == .error)
        #expect(broken.error?.line == 1)
        #expect(broken.error?.file == dir.url("lib/b.js"))
        #expect(try library.call("quad", arguments: [3]) == 12)  // the previous helper stays

        try dir.write("lib/b.js", "function twice(x) { return x * 3 }")
        library.refreshLib()
        #expect(library.libEntries.first { $0.name == "lib/b" }?.status == .ok)
        #expect(try library.call("quad", arguments: [1]) == 9)
    }

    @Test func theRepositoryDemoMacrosAllLoad() throws {
        let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let (engine, model, _) = try makeEngine()
        let library = MacroLibrary(directory: repo.appendingPathComponent("macros").path, engine: engine, logger: silentLogger)
        let entries = try library.reload()
        #expect(entries.map(\.name) == ["animate", "bump", "decrease", "fill", "level", "random", "reset", "tally"])
        #expect(library.libEntries.map(\.name) == ["lib/easing", "lib/rings"])
        #expect(library.libEntries.allSatisfy { $0.status == .ok })
        #expect(entries.allSatisfy { $0.status == .ok })
        try library.call("fill")
        #expect(model.valuesByName == ["inner": 10, "middle": 10, "outer": 10])
        #expect(try library.call("bump", arguments: ["inner", -2.5]) == 7.5)
        try library.call("reset")
        #expect(model.valuesByName == ["inner": 0, "middle": 0, "outer": 0])
        // The animated macro: ten steps to the target, observers see each one.
        let steps = Mutex<[Double]>([])
        model.addObserver { change in steps.locked { $0.append(change.newValue) } }
        #expect(try library.call("animate", arguments: ["middle", 5]) == 5)
        #expect(steps.locked { $0 } == [0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4, 4.5, 5])
        // The module demo: level imports lib/easing.js and reads resources/levels.json.
        #expect(try library.call("level", arguments: ["half"]) == 5)
        #expect(model.valuesByName == ["inner": 5, "middle": 5, "outer": 5])
        #expect(library.dependencies()["level"]?.imports == ["lib/easing"])
        let error = try #require(throws: MacroError.self) { try library.call("bump", arguments: ["sideways"]) }
        #expect(error.headline == "RangeError: unknown channel 'sideways'; use inner, middle or outer")
    }
}
