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

    @Test func aModulesTailRecursion200000DeepRunsAndItsToStringIsTheOriginal() async throws {
        let h = try DebugHarness()
        try h.directory.write("lib/deep.js", "export function down(n) { return n === 0 ? \"done\" : down(n - 1); }\n")
        try h.directory.write("measure.js", "import { down } from \"./lib/deep.js\";\nexport default function () {\n    return [down(200000), down.toString()];\n}\n")
        try h.launch("measure") { $0.timeLimit = .seconds(60) }
        #expect(h.session.skipped.isEmpty)
        h.session.start()
        let outcome = try await h.outcome()
        #expect(outcome.error == nil, "\(outcome.error?.message ?? "")")
        #expect(outcome.result?[0] == "done")
        #expect(outcome.result?[1] == "function down(n) { return n === 0 ? \"done\" : down(n - 1); }", "\(String(describing: outcome.result))")
    }
}
