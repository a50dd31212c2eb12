import Foundation
import Logging
import MacroEngineCore
import MacroTestSupport
import Testing

/// What a session costs, measured (printed for docs/debugging.md; the assertions are on the
/// results, not on the times, which depend on the machine).
@Suite("Debug sessions: what they cost")
struct DebugCostTests {
    static let loop = """
        function loop(n) {
            let s = 0;
            for (let i = 0; i < n; i++) {
                s += i;
            }
            return s;
        }
        """

    @Test func launchAndPerStatementCost() async throws {
        let dir = TemporaryDirectory(prefix: "macro-debug-cost")
        try dir.write("loop.js", Self.loop)
        // The demo macros and lib as well, so that launching instruments a realistic directory.
        for name in try FileManager.default.contentsOfDirectory(atPath: repositoryRoot + "/macros") where name.hasSuffix(".js") {
            try dir.write(name, try String(contentsOfFile: repositoryRoot + "/macros/" + name, encoding: .utf8))
        }
        try dir.write("lib/rings.js", try String(contentsOfFile: repositoryRoot + "/macros/lib/rings.js", encoding: .utf8))
        let n = 1_000_000
        let clock = ContinuousClock()
        var logger = Logger(label: "cost")
        logger.logLevel = .critical

        let plain = MacroEngine(logger: logger)
        try plain.setMethod(javascript: Self.loop, key: "loop", file: dir.url("loop.js"))
        _ = try plain.call("loop", arguments: [.number(1000)])
        let plainStart = clock.now
        #expect(try plain.call("loop", arguments: [.number(Double(n))]) == .number(Double(n) * Double(n - 1) / 2))
        let plainTime = clock.now - plainStart

        let launchStart = clock.now
        let (stream, continuation) = AsyncStream<DebugEvent>.makeStream()
        let session = try DebugSession(
            options: .init(macro: "loop", arguments: [.number(Double(n))], directory: dir.path, timeLimit: .seconds(60)),
            logger: logger
        ) { continuation.yield($0) }
        let launchTime = clock.now - launchStart
        let runStart = clock.now
        session.start()
        var outcome: DebugOutcome?
        for await event in stream { if case .terminated(let o) = event { outcome = o; break } }
        let sessionTime = clock.now - runStart
        #expect(outcome?.result == .number(Double(n) * Double(n - 1) / 2))
        let statements = 2 * n + 2
        let perStatement = (sessionTime - plainTime) / statements
        print(
            "debug cost: launch (instrument \(session.map.files.count) files, \(session.map.sites.count) sites, load) \(launchTime); "
                + "loop of \(n): plain \(plainTime), session \(sessionTime); ≈ \(perStatement) per hooked statement")
    }
}
