import Foundation
import MacroBase
import MacroRPC
import MacroTestSupport
import Testing

/// The requests an editor sends beyond stepping: restart, exceptionInfo, completions,
/// loadedSources, function breakpoints; stepping out of a callback; a quiet disconnect.
extension DapTests {
    @Test func stepOutOfAForEachCallbackGoesBackToItsCaller() async throws {
        let s = try await Self.launch(
            "each", [[1, 2, 3]], breakpoints: ["each.js": [["line": 4, "condition": "x === 1"], ["line": 9, "condition": "x === 1"]]])
        #expect(try await s.dap.event("stopped")["reason"] == "breakpoint")
        let callback = try await s.dap.body("stackTrace", ["threadId": 1])["stackFrames"].arrayValue ?? []
        #expect(callback.map { s.position($0) } == ["each.js:4:9", "each.js:3:5"])
        // Out of the first call: forEach calls it twice more (the same caller, not a way out),
        // then the caller's next statement.
        try await s.dap.body("stepOut", ["threadId": 1])
        #expect(try await s.dap.event("stopped")["reason"] == "step")
        let back = try await s.dap.body("stackTrace", ["threadId": 1])["stackFrames"].arrayValue ?? []
        #expect(back.map { s.position($0) } == ["each.js:6:5"])
        #expect(try await s.dap.body("evaluate", ["expression": "sum", "frameId": back[0]["id"]])["result"] == "6")
        // An arrow called by forEach in `record`, whose forEach is its last statement: out of it
        // is past `record`, at the statement after `record(seen)`.
        try await s.dap.body("continue", ["threadId": 1])
        _ = try await s.dap.event("stopped")
        let arrow = try await s.dap.body("stackTrace", ["threadId": 1])["stackFrames"].arrayValue ?? []
        #expect(arrow.map { s.position($0) } == ["each.js:9:13", "each.js:8:9", "each.js:13:5"])
        #expect(arrow.map(\.["name"]) == ["(anonymous)", "record", "each"])
        try await s.dap.body("stepOut", ["threadId": 1])
        _ = try await s.dap.event("stopped")
        let after = try await s.dap.body("stackTrace", ["threadId": 1])["stackFrames"].arrayValue ?? []
        #expect(after.map { s.position($0) } == ["each.js:14:5"])
        #expect(try await s.dap.body("evaluate", ["expression": "seen.length", "frameId": after[0]["id"]])["result"] == "3")
        try await s.dap.body("continue", ["threadId": 1])
        #expect(try await s.dap.event("output")["output"] == "result: 15\n")
        #expect(try await s.dap.event("exited")["exitCode"] == 0)
        try await s.dap.body("disconnect")
        #expect(s.dap.exitStatus() == 0)
    }
}
