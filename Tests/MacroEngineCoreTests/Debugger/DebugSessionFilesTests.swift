import Foundation
import Logging
import MacroEngineCore
import MacroTestSupport
import Testing

/// What a session loads: what the live engine would, and nothing of the agent a macro can reach.
@Suite("Debug sessions: the files they load")
struct DebugSessionFilesTests {
    private static func launch(
        _ files: [String: String], _ macro: String, configure: (inout DebugSession.Options) -> Void = { _ in }
    ) throws -> (
        DebugSession, AsyncStream<DebugEvent>, TemporaryDirectory
    ) {
        let directory = TemporaryDirectory(prefix: "debug-files")
        for (path, text) in files { try directory.write(path, text) }
        var options = DebugSession.Options(macro: macro, directory: directory.path)
        configure(&options)
        let (stream, continuation) = AsyncStream<DebugEvent>.makeStream()
        var logger = Logger(label: "debug-files")
        logger.logLevel = .critical
        return (try DebugSession(options: options, logger: logger) { continuation.yield($0) }, stream, directory)
    }

    private static func outcome(_ session: DebugSession, _ events: AsyncStream<DebugEvent>) async -> DebugOutcome? {
        session.start()
        for await event in events { if case .terminated(let outcome) = event { return outcome } }
        return nil
    }

    @Test func aBrokenLibFileIsSkippedWithItsOneBasedPosition() async throws {
        let (session, events, directory) = try Self.launch(
            ["lib/broken.js": "// one\n// two\n// three\nvar y = x +* 2;\n", "lib/ok.js": "function twice(x) { return 2 * x }", "bump.js": "function bump() { return twice(21) }"],
            "bump")
        #expect(session.skipped.map(\.path) == [DebugSession.normalized(directory.url("lib/broken.js"))])
        #expect(session.skipped.first?.message == "SyntaxError: Unexpected token (4:12)")
        #expect(await Self.outcome(session, events)?.result == 42)
    }

    @Test func aBrokenMacroFileIsSkippedUnlessItIsTheOneDebugged() throws {
        let files = ["broken.js": "function broken() { return +* }", "bump.js": "function bump() { return 1 }"]
        #expect(try Self.launch(files, "bump").0.skipped.count == 1)
        let error = try #require(throws: DebugError.self) { try Self.launch(files, "broken") }
        #expect(error.code == .launchFailed)
        #expect(error.message.hasSuffix("SyntaxError: Unexpected token (1:29)"))
    }

    @Test func aLibFileTheLiveEngineQuarantinedIsNotLoaded() async throws {
        let source = "(async () => { for (;;) await null; })();"
        var held: String = ""
        let (session, events, _) = try Self.launch(["lib/stall.js": source, "bump.js": "function bump() { return 7 }"], "bump") { options in
            held = DebugSession.normalized(options.directory + "/lib/stall.js")
            options.quarantine.add(held, hash: Quarantine.hash(Array(source.utf8)), stuckMilliseconds: 5000)
        }
        #expect(session.skipped.map(\.path) == [held])
        #expect(session.skipped.first?.message.hasPrefix("quarantined by the live engine") == true)
        #expect(await Self.outcome(session, events)?.result == 7)
    }

    @Test(arguments: [
        ("function shadow(__dbg) { return typeof __dbg }", "shadow", MacroValue.string("undefined")),
        ("function shadow() { var __dbg_f = 5; var __dbg = 2; return __dbg_f * __dbg }", "shadow", MacroValue.number(10)),
        ("function __dbg() { return 3 }", "__dbg", MacroValue.number(3)),
        ("function __dbg_native() { return 4 }", "__dbg_native", MacroValue.number(4)),
    ])
    func namesTheAgentUsesCannotBeShadowed(_ source: String, _ macro: String, _ expected: MacroValue) async throws {
        let (session, events, _) = try Self.launch(["\(macro).js": source], macro)
        let outcome = await Self.outcome(session, events)
        #expect(outcome?.error == nil)
        #expect(outcome?.result == expected)
    }

    @Test(arguments: [
        ("function strict() {\n    \"use strict\"\n    return typeof this\n}\n", "strict", MacroValue.string("undefined")),
        ("function both() {\n    'use strict'\n    \"another\"\n    return 2\n}\n", "both", MacroValue.number(2)),
    ])
    func aDirectiveWithoutASemicolonIsDebuggedAsItRunsLive(_ source: String, _ macro: String, _ expected: MacroValue) async throws {
        let (session, events, _) = try Self.launch(["\(macro).js": source], macro)
        let outcome = await Self.outcome(session, events)
        #expect(outcome?.error == nil, "\(String(describing: outcome?.error))")
        #expect(outcome?.result == expected)
    }

    @Test func theMacrosOwnEvalFollowsTheLiveSettingAndTheDebuggersAlwaysWorks() async throws {
        let source = "function ev() {\n    let n = 20;\n    return (0, eval)('1 + 1');\n}\n"
        let (session, events, directory) = try Self.launch(["ev.js": source], "ev")
        _ = session.setBreakpoints(path: directory.url("ev.js"), [.init(line: 3)])
        let iterator = Task {
            var iterator = events.makeAsyncIterator()
            var seen: [DebugEvent] = []
            while let event = await iterator.next() {
                seen.append(event)
                if case .terminated = event { break }
                if case .stopped(let stop) = event {
                    #expect(try await session.request("evaluate", ["expression": "n * 2 + 2", "frameId": stop["id"]])["value"] == "42")
                    #expect(try await session.request("evaluate", ["expression": "eval('n + 1')", "frameId": stop["id"]])["value"] == "21")
                    try await session.request("continue")
                }
            }
            return seen
        }
        session.start()
        let seen = try await iterator.value
        guard case .terminated(let outcome) = seen.last else { Issue.record("no terminated event"); return }
        #expect(outcome.error?.message == "eval and new Function are disabled in macros (config: allow_eval)")
    }
}
