import Foundation
import MacroTestSupport
import Synchronization
import Testing

@testable import MacroEngineCore

/// ES modules in lib/: imports, the atomic reload of a module with its importers, reload
/// handlers, `dispose`, and the errors of a broken module at their file:line:column.
@Suite("Modules")
struct ModuleTests {
    func library(_ dir: TemporaryDirectory, timeLimit: Duration = .seconds(5)) throws -> (MacroLibrary, MacroEngine) {
        let (engine, _, _) = try makeEngine(timeLimit: timeLimit)
        try FileManager.default.createDirectory(atPath: dir.url("lib"), withIntermediateDirectories: true)
        return (MacroLibrary(directory: dir.path, engine: engine, logger: silentLogger), engine)
    }

    /// Records the library's changes.
    final class Changes: Sendable {
        let list = Mutex<[MacroLibrary.Change]>([])
        init(_ library: MacroLibrary) { library.onChange { [weak self] change in self?.list.withLock { $0.append(change) } } }
        var all: [MacroLibrary.Change] { list.withLock { $0 } }
        func clear() { list.withLock { $0.removeAll() } }
    }

    static let rings = """
        export const SCALE = 2;
        export function double(x) { return x * SCALE; }
        export default function triple(x) { return x * 3; }
        """

    @Test func aMacroImportsAModuleAndAModuleEditChangesItsNextResultWithoutASaveOfTheMacro() throws {
        let dir = TemporaryDirectory()
        try dir.write("lib/rings.js", Self.rings)
        try dir.write("twice.js", "import { double } from \"./lib/rings.js\";\nfunction twice(x) { return double(x); }\n")
        try dir.write("thrice.js", "import triple, * as rings from './lib/rings.js';\nexport default function (x) { return triple(x) + rings.SCALE; }\n")
        try dir.write("plain.js", "function () { return 'plain' }")
        let (library, _) = try library(dir)
        let entries = try library.reload()
        #expect(entries.map(\.status) == [.ok, .ok, .ok])
        #expect(library.libEntries.map(\.name) == ["lib/rings"])
        #expect(library.libEntries.first?.status == .ok)
        #expect(try library.call("twice", arguments: [5]) == 10)
        #expect(try library.call("thrice", arguments: [5]) == 17)
        #expect(try library.call("plain") == "plain")

        let changes = Changes(library)
        try dir.write("lib/rings.js", Self.rings.replacingOccurrences(of: "SCALE = 2", with: "SCALE = 10"))
        library.refreshLib()
        #expect(try library.call("twice", arguments: [5]) == 50)
        #expect(try library.call("thrice", arguments: [5]) == 25)
        #expect(library.entry(named: "twice")?.version == 2)
        let loaded = changes.all.compactMap { change -> String? in
            if case .loaded(let name, let version, let dependents) = change { return "\(name) v\(version) \(dependents)" }
            return nil
        }
        #expect(loaded == ["lib/rings v2 [\"thrice\", \"twice\"]", "thrice v2 []", "twice v2 []"])
        let graph = library.dependencies()
        #expect(graph["twice"]?.imports == ["lib/rings"])
        #expect(graph["lib/rings"]?.importers == ["thrice", "twice"])
    }

    @Test func modulesImportModulesAndReExport() throws {
        let dir = TemporaryDirectory()
        try dir.write("lib/a.js", "export let base = 7;\nexport function bump() { base += 1; return base; }\n")
        try dir.write("lib/b.js", "export { base as start, bump } from './a.js';\nexport * from './a.js';\nimport * as a from './a.js';\nexport const sum = () => a.base + 1;\n")
        try dir.write("use.js", "import { start, sum, bump, base } from './lib/b.js';\nfunction use() { return [start, bump(), sum(), base]; }\n")
        let (library, engine) = try library(dir)
        try library.reload()
        #expect(library.entry(named: "use")?.status == .ok)
        #expect(try library.call("use") == [7, 8, 9, 7])
        // Namespaces are frozen.
        try dir.write(
            "poke.js", "import * as b from './lib/b.js';\nfunction poke() { 'use strict'; try { b.sum = 1; return 'changed'; } catch (e) { return e.constructor.name; } }\n")
        library.refresh(filename: "poke.js")
        #expect(try library.call("poke") == "TypeError")
        _ = engine
    }

    @Test func eachBrokenModuleKeepsEveryDependentOnItsOldVersionAndSaysWhere() throws {
        let dir = TemporaryDirectory()
        try dir.write("lib/rings.js", Self.rings)
        try dir.write("lib/user.js", "import { double } from './rings.js';\nexport const quad = (x) => double(double(x));\n")
        try dir.write("quad.js", "import { quad } from './lib/user.js';\nfunction quad4() { return quad(1); }\n")
        // A top level that loops is stopped at the time limit (longer than the watchdog's tick).
        let (library, _) = try library(dir, timeLimit: .milliseconds(600))
        try library.reload()
        #expect(try library.call("quad") == 4)
        let changes = Changes(library)
        let cases: [(String, String, Int, Int, String)] = [
            ("export function double(x) { return x * ; }\n", "lib/rings.js", 1, 40, "Unexpected token"),
            ("export function halve(x) { return x / 2; }\n", "lib/user.js", 1, 10, "'./rings.js' has no export named 'double' (it exports: halve)"),
            (
                "import { quad } from './user.js';\nexport function double(x) { return quad(x); }\n", "lib/rings.js", 1, 22,
                "import cycle: lib/rings.js → lib/user.js → lib/rings.js"
            ),
            ("export function double(x) { return x; }\nthrow new RangeError('at load');\n", "lib/rings.js", 2, 21, "at load"),
            ("export function double(x) { return x; }\nfor (;;) {}\n", "lib/rings.js", 2, 1, "stopped while loading"),
        ]
        for (source, file, line, column, message) in cases {
            changes.clear()
            try dir.write("lib/rings.js", source)
            library.refreshLib()
            let failure = changes.all.compactMap { change -> MacroError? in
                if case .failed(let name, let error, _) = change, name == "lib/rings" { return error }
                return nil
            }.first
            let error = try #require(failure, "no failure for \(source)")
            #expect(error.file == dir.url(file), "\(source)")
            #expect(error.line == line, "\(source)")
            #expect(error.column == column, "\(source)")
            #expect(error.message.contains(message), "\(error.message)")
            // Every dependent serves its old version.
            #expect(try library.call("quad") == 4, "\(source)")
            #expect(library.entry(named: "quad")?.version == 1)
        }
        // Fixing the module brings every dependent back (on the new version).
        try dir.write("lib/rings.js", Self.rings.replacingOccurrences(of: "SCALE = 2", with: "SCALE = 3"))
        library.refreshLib()
        #expect(try library.call("quad") == 9)
        #expect(library.libEntries.map(\.status) == [.ok, .ok])
    }

    @Test func aDeletedModuleFailsItsImportersByNameAndItsReturnBringsThemBack() throws {
        let dir = TemporaryDirectory()
        try dir.write("lib/rings.js", Self.rings)
        try dir.write("twice.js", "import { double } from './lib/rings.js';\nfunction twice(x) { return double(x); }\n")
        let (library, _) = try library(dir)
        try library.reload()
        try FileManager.default.removeItem(atPath: dir.url("lib/rings.js"))
        library.refreshLib()
        let lost = try #require(library.entry(named: "twice")?.error)
        #expect(lost.message.contains("lib/rings.js does not exist"))
        #expect(try library.call("twice", arguments: [2]) == 4)
        // A new macro importing it does not load, and says which module is missing.
        try dir.write("other.js", "import { double } from './lib/rings.js';\nfunction other() { return double(1); }\n")
        let other = library.refresh(filename: "other.js")
        #expect(other?.error?.message == "cannot import './lib/rings.js': lib/rings.js does not exist")
        #expect(other?.error?.line == 1)
        #expect(other?.error?.column == 24)
        try dir.write("lib/rings.js", Self.rings)
        library.refreshLib()
        #expect(library.entry(named: "twice")?.status == .ok)
        #expect(library.entry(named: "other")?.status == .ok)
        #expect(try library.call("other") == 2)
    }

    @Test func aReloadHandlerRunsOncePerReloadAndDisposeClearsTheOldVersionsInterval() throws {
        let dir = TemporaryDirectory()
        try dir.write(
            "lib/ticker.js",
            """
            export let ticks = 0;
            const id = setInterval(() => { globalThis.ticked = (globalThis.ticked || 0) + 1; }, 1000000);
            export function dispose() { clearInterval(id); globalThis.disposed = (globalThis.disposed || 0) + 1; }
            export const version = 1;
            """)
        try dir.write(
            "lib/watcher.js",
            "import { version } from './ticker.js';\nonReload((info) => { globalThis.heard = (globalThis.heard || []).concat([info.module + ' v' + info.version]); });\nexport const seen = version;\n"
        )
        try dir.write("probe.js", "function probe() { return [globalThis.heard || [], globalThis.disposed || 0]; }")
        let (library, engine) = try library(dir)
        try library.reload()
        #expect(try library.call("probe") == [[], 0])
        let before = try engine.sync { $0.timers.count }
        try dir.write("lib/ticker.js", try String(contentsOfFile: dir.url("lib/ticker.js"), encoding: .utf8).replacingOccurrences(of: "version = 1", with: "version = 2"))
        library.refreshLib()
        #expect(try library.call("probe") == [["lib/ticker v2"], 1])
        // The old version's interval is gone: one interval, the new version's.
        #expect(try engine.sync { $0.timers.count } == before)
        try dir.write("lib/ticker.js", try String(contentsOfFile: dir.url("lib/ticker.js"), encoding: .utf8).replacingOccurrences(of: "version = 2", with: "version = 3"))
        library.refreshLib()
        #expect(try library.call("probe") == [["lib/ticker v2", "lib/ticker v3"], 2])
    }

    @Test func resourcesAreReadLiveAndConfinedToTheirFolder() throws {
        let dir = TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: dir.url("resources/sub"), withIntermediateDirectories: true)
        try dir.write("resources/words.txt", "alpha beta")
        try dir.write("resources/sub/cfg.json", "{\"speed\": 3, \"names\": [\"a\"]}")
        try dir.write("resources/bad.json", "{\"speed\": }")
        try dir.write("outside.txt", "secret")
        try FileManager.default.createSymbolicLink(atPath: dir.url("resources/link.txt"), withDestinationPath: dir.url("outside.txt"))
        try dir.write("read.js", "function read(name) { try { return resource(name); } catch (e) { return e.message; } }")
        let (library, _) = try library(dir)
        try library.reload()
        #expect(try library.call("read", arguments: ["words.txt"]) == "alpha beta")
        #expect(try library.call("read", arguments: ["sub/cfg.json"]) == ["speed": 3, "names": ["a"]])
        try dir.write("resources/words.txt", "gamma")
        #expect(try library.call("read", arguments: ["words.txt"]) == "gamma")
        #expect(
            try library.call("read", arguments: ["../outside.txt"]) == "resource('../outside.txt'): '..' is not allowed: resources are read from inside the resources folder only")
        let absolute = try library.call("read", arguments: [.string(dir.url("outside.txt"))])
        #expect(absolute.stringValue?.contains("an absolute path is not allowed") == true)
        let link = try library.call("read", arguments: ["link.txt"])
        #expect(link.stringValue?.contains("symlink that leads out of the resources folder") == true)
        let bad = try library.call("read", arguments: ["bad.json"])
        #expect(bad.stringValue?.hasPrefix("resource('bad.json'): the file is not valid JSON") == true)
        let missing = try library.call("read", arguments: ["nope.txt"])
        #expect(missing.stringValue?.hasPrefix("resource('nope.txt'): no such file") == true)
    }

    @Test func aRunawayInAModuleFunctionIsNamedAtItsFileLineAndColumn() throws {
        let dir = TemporaryDirectory()
        try dir.write("lib/spin.js", "export function spin() {\n  let n = 0;\n  while (true) { n++; }\n}\n")
        try dir.write("go.js", "import { spin } from './lib/spin.js';\nfunction go() { spin(); }\n")
        let (library, _) = try library(dir)
        try library.reload()
        let error = try #require(throws: MacroError.self) { try library.call("go", timeLimit: .milliseconds(200)) }
        #expect(error.code == .timeout)
        #expect(error.file == dir.url("lib/spin.js"))
        #expect(error.line == 3)
        #expect(error.column == 3)
    }

    @Test func aMacroFileRunsNothingAtLoadAndStaysOneFunction() throws {
        let dir = TemporaryDirectory()
        try dir.write("lib/rings.js", Self.rings)
        try dir.write("extra.js", "import { double } from './lib/rings.js';\nconst x = double(2);\nfunction extra() { return x; }\n")
        try dir.write("anon.js", "import { double } from './lib/rings.js';\nfunction (x) { return double(x); }\n")
        let (library, _) = try library(dir)
        try library.reload()
        let extra = try #require(library.entry(named: "extra")?.error)
        #expect(extra.line == 2)
        #expect(extra.column == 1)
        #expect(extra.message.hasPrefix("a macro file holds its imports, one function"))
        let anon = try #require(library.entry(named: "anon")?.error)
        #expect(anon.line == 2)
        #expect(anon.message.contains("one named function"))
    }

    @Test func theProfilerNamesModuleFiles() throws {
        let dir = TemporaryDirectory()
        try dir.write("lib/work.js", "// work\nexport function hot(n) {\n    let s = 0;\n    for (let i = 0; i < n; i++) s += Math.sqrt(i);\n    return s;\n}\n")
        try dir.write("heavy.js", "import { hot } from './lib/work.js';\nfunction heavy() {\n    let t = 0;\n    for (let k = 0; k < 50; k++) t += hot(20000);\n    return t;\n}\n")
        let (library, _) = try library(dir, timeLimit: .seconds(30))
        try library.reload()
        let profile = try library.profile("heavy", runs: 5).wait()
        let frames = Set(profile.folded.split(separator: "\n").flatMap { line in line[..<line.lastIndex(of: " ")!].split(separator: ";").map(String.init) })
        #expect(frames.contains("heavy (heavy.js:2)"), "\(frames)")
        #expect(frames.contains("hot (lib/work.js:2)"), "\(frames)")
    }

    @Test func theGraphOrdersModulesAndNamesCycles() {
        let graph = ModuleGraph(edges: ["a": ["b"], "b": ["c"], "c": [], "x": ["y"], "y": ["x"]])
        #expect(graph.order.filter { ["a", "b", "c"].contains($0) } == ["c", "b", "a"])
        #expect(graph.cycles == ["x": ["x", "y", "x"], "y": ["y", "x", "y"]])
    }
}
