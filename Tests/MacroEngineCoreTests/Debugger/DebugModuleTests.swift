import Foundation
import MacroEngineCore
import MacroTestSupport
import Testing

@Suite("Debug sessions: modules")
struct DebugModuleTests {
    @Test func steppingIntoAnImportedFunctionStopsAtItsExactLine() async throws {
        let h = try DebugHarness()
        try h.directory.write("lib/shapes.js", "export const UNIT = 1;\nexport function area(w, h) {\n    const a = w * h * UNIT;\n    return a;\n}\n")
        try h.directory.write("measure.js", "import { area } from \"./lib/shapes.js\";\nexport default function (w) {\n    const r = area(w, 2);\n    return r + 1;\n}\n")
        try h.launch("measure", [5], stopOnEntry: true)
        #expect(h.session.skipped.isEmpty)
        h.session.start()
        #expect(h.position(try await h.nextStop()) == "measure.js:3:5 entry")
        try await h.session.request("stepIn")
        #expect(h.position(try await h.nextStop()) == "lib/shapes.js:3:5 step")
        let stack = try await h.session.request("stackTrace")
        #expect((stack["frames"].arrayValue ?? []).map { h.position($0) } == ["lib/shapes.js:3:5", "measure.js:3:5"])
        try await h.session.request("next")
        #expect(h.position(try await h.nextStop()) == "lib/shapes.js:4:5 step")
        try await h.session.request("continue")
        #expect(try await h.outcome().result == 11)
    }

    @Test func aBreakpointInAModuleBindsAndStops() async throws {
        let h = try DebugHarness()
        try h.directory.write("lib/shapes.js", "export function area(w, h) {\n    const a = w * h;\n    return a;\n}\n")
        try h.directory.write("measure.js", "import { area } from './lib/shapes.js';\nfunction measure(w) { return area(w, 3); }\n")
        try h.launch("measure", [2])
        #expect(h.session.setBreakpoints(path: h.path("lib/shapes.js"), [.init(line: 3)]) == [.init(id: 1, verified: true, line: 3, column: 5)])
        h.session.start()
        #expect(h.position(try await h.nextStop()) == "lib/shapes.js:3:5 breakpoint")
        try await h.session.request("continue")
        #expect(try await h.outcome().result == 6)
    }
}
