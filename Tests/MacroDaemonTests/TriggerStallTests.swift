import Foundation
import MacroEngineCore
import MacroRPC
import MacroTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A triggered macro that stalls the engine: the stall restart re-arms the triggers (they
/// survive it), the second stall quarantines the macro and pauses its schedule, and a saved fix
/// resumes it. Through macrod's process: a stall restart is a re-exec.
@Suite("Triggers across stall restarts", .serialized)
struct TriggerStallTests {
    static let config = "time_limit_ms: 300\nstall_grace_ms: 300\n"

    /// `macro.triggers`' entry of `name` once `done` holds for it: looked at after each engine
    /// restart, when the next process says READY=1 (its triggers armed, its connections
    /// adopted), for `restarts` restarts at most.
    func afterRestarts(_ daemon: DaemonProcess, _ client: RPCClient, _ name: String, restarts: Int, until done: (MacroValue) -> Bool) throws -> MacroValue? {
        var last: MacroValue?
        for _ in 0..<restarts {
            guard daemon.nextReady(timeout: .seconds(30)) else { break }
            last = try client.call("macro.triggers", ["name": .string(name)]).arrayValue?.first
            if let last, done(last) { return last }
        }
        Issue.record("macro.triggers never showed what was waited for; last: \(last?.jsonText() ?? "nothing")\n\(daemon.log)")
        return nil
    }

    @Test func aTriggeredMacroThatStallsIsQuarantinedItsSchedulePausesAndAFixResumesIt() throws {
        let wedge = "export const triggers = [{ every: \"200ms\" }];\nexport default async function wedge() { for (;;) await null; }\n"
        let daemon = try DaemonProcess(files: ["wedge.js": wedge], config: Self.config)
        let client = try daemon.client()
        client.setReceiveTimeout(seconds: 30)
        // Two stalls (each a restart that arms the schedule again), then the quarantine.
        let paused = try afterRestarts(daemon, client, "wedge", restarts: 4) { $0["paused"].stringValue?.hasPrefix("quarantined") == true }
        #expect(paused != nil)
        let status = try client.call("engine.status")
        #expect(status["quarantined"].arrayValue?.first?["name"] == "wedge")
        #expect((status["quarantined"].arrayValue?.first?["stalls"].intValue ?? 0) >= 2)
        // A saved fix lifts the quarantine and the schedule runs again: three runs started, so
        // two ended (mode single: a run starts only once the one before it has ended and been
        // counted).
        _ = try client.call("subscribe", ["events": ["macros"]])
        _ = try client.call(
            "macro.save", ["name": "wedge", "source": "export const triggers = [{ every: \"200ms\" }];\nexport default function wedge() { progress.inner += 1; }\n"])
        for _ in 0..<3 { _ = try client.waitFor("macro.triggered", seconds: 30) { $0["name"] == "wedge" } }
        let resumed = try #require(try client.call("macro.triggers", ["name": "wedge"]).arrayValue?.first)
        #expect(resumed["paused"] == .null && (resumed["fired"].intValue ?? 0) >= 2 && resumed["lastRun"]["ok"] == true, "\(resumed)")
        #expect((try client.call("progress.get")["inner"].doubleValue ?? 0) >= 1)
    }
}
