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

    /// `macro.triggers`' entry of `name`, asked until `done` holds for it (30 s at most): each
    /// answer is a round trip to macrod, which answers -32006 while it restarts.
    func wait(_ client: RPCClient, _ name: String, until done: (MacroValue) -> Bool) -> MacroValue? {
        let deadline = Date().addingTimeInterval(30)
        var last: MacroValue?
        while Date() < deadline {
            if let list = try? client.call("macro.triggers", ["name": .string(name)]), let entry = list.arrayValue?.first {
                last = entry
                if done(entry) { return entry }
            }
            usleep(50_000)
        }
        Issue.record("macro.triggers never showed what was waited for; last: \(last?.jsonText() ?? "nothing")")
        return nil
    }

    @Test func aTriggeredMacroThatStallsIsQuarantinedItsSchedulePausesAndAFixResumesIt() throws {
        let wedge = "export const triggers = [{ every: \"200ms\" }];\nexport default async function wedge() { for (;;) await null; }\n"
        let daemon = try DaemonProcess(files: ["wedge.js": wedge], config: Self.config)
        let client = try daemon.client()
        client.setReceiveTimeout(seconds: 30)
        // Two stalls (each a restart that arms the schedule again), then the quarantine.
        let paused = wait(client, "wedge") { $0["paused"].stringValue?.hasPrefix("quarantined") == true }
        #expect(paused != nil)
        let status = try client.call("engine.status")
        #expect(status["quarantined"].arrayValue?.first?["name"] == "wedge")
        #expect((status["quarantined"].arrayValue?.first?["stalls"].intValue ?? 0) >= 2)
        // A saved fix lifts the quarantine and the schedule runs again.
        _ = try client.call(
            "macro.save", ["name": "wedge", "source": "export const triggers = [{ every: \"200ms\" }];\nexport default function wedge() { progress.inner += 1; }\n"])
        let resumed = wait(client, "wedge") { $0["paused"] == .null && ($0["fired"].intValue ?? 0) >= 2 && $0["lastRun"]["ok"] == true }
        #expect(resumed != nil)
        #expect((try client.call("progress.get")["inner"].doubleValue ?? 0) >= 1)
    }
}
