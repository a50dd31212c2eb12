import Foundation
import MacroTestSupport
import Testing

@testable import MacroEngineCore

/// Modules and resources used the way a hostile or careless user would.
@Suite("Modules, hostile")
struct ModuleHostileTests {
    func library(_ dir: TemporaryDirectory, timeLimit: Duration = .milliseconds(600)) throws -> MacroLibrary {
        let (engine, _, _) = try makeEngine(timeLimit: timeLimit)
        try FileManager.default.createDirectory(atPath: dir.url("lib"), withIntermediateDirectories: true)
        return MacroLibrary(directory: dir.path, engine: engine, logger: silentLogger)
    }

    @Test func badImportsAreLoadErrorsAtTheSpecifier() throws {
        let dir = TemporaryDirectory()
        try dir.write("lib/self.js", "import * as me from './self.js';\nexport const x = 1;\n")
        try dir.write("lib/script.js", "function shared() { return 1; }\n")
        try dir.write("other.js", "function other() { return 1; }\n")
        try dir.write("a.js", "import { shared } from './lib/script.js';\nfunction a() { return shared(); }\n")
        try dir.write("b.js", "import { other } from './other.js';\nfunction b() { return other(); }\n")
        try dir.write("c.js", "import { x } from 'rings';\nfunction c() { return x; }\n")
        try dir.write("d.js", "import { x } from './lib/self';\nfunction d() { return x; }\n")
        try dir.write("e.js", "import { x } from '/etc/passwd.js';\nfunction e() { return x; }\n")
        try dir.write("lib/tla.js", "export const v = await Promise.resolve(1);\n")
        let library = try library(dir)
        try library.reload()
        func error(_ name: String) -> String {
            let entry = library.entry(named: name) ?? library.libEntries.first { $0.name == name }
            guard let error = entry?.error else { return "ok" }
            return "\(error.line ?? 0):\(error.column ?? 0) \(error.message)"
        }
        #expect(error("lib/self") == "1:21 import cycle: lib/self.js → lib/self.js")
        #expect(error("a") == "1:24 cannot import './lib/script.js': \(dir.url("lib/script.js")) is not a module (modules are the .js files of lib/ with an import or export)")
        #expect(error("b").hasPrefix("1:23 cannot import './other.js': "))
        #expect(error("c") == "1:19 cannot import 'rings': modules are named by a path relative to the importing file, such as './lib/rings.js'")
        #expect(error("d").hasPrefix("1:19 cannot import './lib/self': name the module's file with its .js extension"))
        #expect(error("e").hasPrefix("1:19 cannot import '/etc/passwd.js': modules are named by a path relative"))
        #expect(error("lib/tla") == "1:18 top-level await is not supported in modules: await inside a function (an async function, or a macro's body)")
        // The lib script still shares its globals the old way.
        try dir.write("f.js", "function f() { return shared(); }\n")
        library.refresh(filename: "f.js")
        #expect(try library.call("f") == 1)
    }

    @Test func disposeAndReloadHandlersThatMisbehaveAreStoppedAndTheSwapHolds() throws {
        let dir = TemporaryDirectory()
        try dir.write("lib/m.js", "export const v = 1;\nexport function dispose() { for (;;) {} }\n")
        try dir.write("lib/user.js", "import { v } from './m.js';\nonReload(() => { throw new Error('handler broke'); });\nexport const w = v;\n")
        try dir.write("use.js", "import { w } from './lib/user.js';\nfunction use() { return w; }\n")
        let library = try library(dir)
        try library.reload()
        #expect(try library.call("use") == 1)
        try dir.write("lib/m.js", "export const v = 2;\nexport function dispose() { for (;;) {} }\n")
        library.refreshLib()
        // The dispose that looped was stopped, the handler that threw was reported, and the
        // new versions are live.
        #expect(try library.call("use") == 2)
        #expect(library.libEntries.allSatisfy { $0.status == .ok })
    }

    @Test func aLongChainOfModulesLoadsAndReloadsInOrder() throws {
        let dir = TemporaryDirectory()
        let count = 200
        try dir.write("lib/m0.js", "export const n = 0;\n")
        for i in 1..<count { try dir.write("lib/m\(i).js", "import { n as p } from './m\(i - 1).js';\nexport const n = p + 1;\n") }
        try dir.write("top.js", "import { n } from './lib/m\(count - 1).js';\nfunction top() { return n; }\n")
        let library = try library(dir, timeLimit: .seconds(5))
        try library.reload()
        #expect(try library.call("top") == .number(Double(count - 1)))
        try dir.write("lib/m0.js", "export const n = 1000;\n")
        library.refreshLib()
        #expect(try library.call("top") == .number(Double(1000 + count - 1)))
    }

    @Test func aResourceThatIsAFifoOrADeviceIsRefusedWithoutBlocking() throws {
        let dir = TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: dir.url("resources"), withIntermediateDirectories: true)
        #expect(mkfifo(dir.url("resources/pipe.txt"), 0o600) == 0)
        try dir.write("read.js", "function read(name) { try { return resource(name); } catch (e) { return e.message; } }")
        let library = try library(dir)
        try library.reload()
        #expect(try library.call("read", arguments: ["pipe.txt"]) == "resource('pipe.txt'): it is not a regular file")
        #expect(try library.call("read", arguments: [""]) == "resource(''): the name is empty; name a file of the resources folder, such as \"words.txt\"")
        #expect(try library.call("read", arguments: ["."]) == "resource('.'): it is a folder, not a file")
    }
}
