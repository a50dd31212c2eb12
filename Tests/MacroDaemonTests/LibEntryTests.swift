import Foundation
import Logging
import MacroEngineCore
import MacroRPC
import MacroTestSupport
import Testing

/// What the daemon tells tools about `macros/lib/`, and `macro.types`.
@Suite("macrod lib entries and types")
struct LibEntryTests {
    static let files = [
        "lib/good.js": "function twice(x) { return 2 * x }",
        "lib/rings.js": "function setAll(v) {\n  var x = 1;\n  return ;;(\n}\n",
        "fill.js": "function() { setAll(10); return progress.inner }",
        "double.js": "function(x) { return twice(x) }",
        "ghost.js": "function() { return nowhere() }",
    ]

    @Test func listAndStatusShowLibFilesAfterTheMacros() throws {
        let daemon = try DaemonProcess(files: Self.files)
        let client = try daemon.client()
        let list = try #require(try client.call("macro.list").arrayValue)
        #expect(list.compactMap { $0["name"].stringValue } == ["double", "fill", "ghost", "lib/good", "lib/rings"])
        #expect(list.compactMap { $0["kind"].stringValue } == ["macro", "macro", "macro", "lib", "lib"])
        #expect(list[0] == ["name": "double", "kind": "macro", "status": "ok", "file": .string(daemon.macros + "/double.js"), "version": 1])
        #expect(list[3] == ["name": "lib/good", "kind": "lib", "status": "ok", "file": .string(daemon.macros + "/lib/good.js"), "version": 1])
        #expect(
            list[4] == [
                "name": "lib/rings", "kind": "lib", "status": "error", "file": .string(daemon.macros + "/lib/rings.js"), "version": 0,
                "error": ["message": "SyntaxError: Unexpected token '}'", "line": 4, "column": 1],
            ])
        let status = try client.call("engine.status")
        #expect(status["macros"] == ["ok": 3, "broken": 0])
        #expect(status["lib"] == ["ok": 1, "broken": 1])
        #expect(try client.call("macro.call", ["name": "double", "args": [21]]) == 42)
    }

    @Test func aMissingHelperPointsAtTheBrokenLibFile() throws {
        let daemon = try DaemonProcess(files: Self.files)
        let client = try daemon.client()
        let error = try #require(throws: RPCError.self) { try client.call("macro.call", ["name": "fill"]) }
        #expect(error.code == -32000)
        #expect(error.message == "ReferenceError: Can't find variable: setAll; note: lib/rings.js failed to load: SyntaxError: Unexpected token '}' at line 4:1")
        #expect(error.data?["line"] == 1)
        // A name no lib file mentions: every broken lib file is named (here the one).
        let other = try #require(throws: RPCError.self) { try client.call("macro.call", ["name": "ghost"]) }
        #expect(other.message == "ReferenceError: Can't find variable: nowhere; note: lib/rings.js failed to load: SyntaxError: Unexpected token '}' at line 4:1")
        // Fixed: no note, the helper works.
        _ = try client.call("subscribe", ["events": ["macros"]])
        try daemon.dir.write("macros/lib/rings.js", "function setAll(v) { progress.inner = v }")
        #expect(try client.waitFor("macro.loaded") == ["name": "lib/rings", "version": 1])
        #expect(try client.call("macro.call", ["name": "fill"]) == 10)
        let plain = try #require(throws: RPCError.self) { try client.call("macro.call", ["name": "ghost"]) }
        #expect(plain.message == "ReferenceError: Can't find variable: nowhere")
    }

    @Test func typesAreTheDeclarationsTheEngineGenerates() throws {
        let daemon = try DaemonProcess(files: ["lib/good.js": Self.files["lib/good.js"]!, "double.js": Self.files["double.js"]!])
        let client = try daemon.client()
        let source = try #require(try client.call("macro.types")["source"].stringValue)
        // The same text an engine with the same files generates in-process.
        let engine = MacroEngine(logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() })
        let model = ProgressModel()
        try engine.add(model)
        let library = MacroLibrary(directory: daemon.macros, engine: engine, logger: engine.logger)
        let names = try library.reload().filter { $0.version > 0 }.map(\.name)
        #expect(source == (try engine.typeDeclarations(channels: model.channels, macros: names)))
        // Lib helpers declare themselves in the editor's project (macros/jsconfig.json); a bare
        // `function(x)` macro declares no name, so the d.ts does.
        #expect(!source.contains("twice"))
        #expect(source.hasSuffix("// Macros written as a bare `function(...) {...}` or as a module (macros/NAME.js): each is a global.\ndeclare function double(x?: any): any;\n"))
    }
}
