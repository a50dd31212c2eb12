import Foundation
import MacroEngineCore
import MacroRPC
import MacroTestSupport
import Testing

@Suite("macrod subscriptions")
struct SubscriptionTests {
    static let files = [
        "random.js": "function() { setInnerProgress(getInnerProgress() + 1); setMiddleProgress(getMiddleProgress() + 2); setOuterProgress(getOuterProgress() + 3) }",
        "noop.js": "function() { return progress.inner }",
        "say.js": "function() { return 'hi' }",
    ]

    @Test func progressChangesArriveOncePerCallWithSeqIncreasingByOne() throws {
        let daemon = try DaemonProcess(files: Self.files)
        let watcher = try daemon.client()
        _ = try watcher.call("subscribe", ["events": ["progress"]])
        let caller = try daemon.client()
        try caller.call("macro.call", ["name": "random"])  // three rings, one notification
        try caller.call("macro.call", ["name": "noop"])  // nothing changed, no notification
        try caller.call("progress.set", ["inner": 0.5])
        try caller.call("progress.set", ["inner": 0.5])  // same value: no change
        try caller.call("macro.call", ["name": "random"])
        let notes = try (0..<3).map { _ in try watcher.waitFor("progress.changed") }
        #expect(
            notes == [
                ["inner": 1, "middle": 2, "outer": 3, "seq": 1],
                ["inner": 0.5, "middle": 2, "outer": 3, "seq": 2],
                ["inner": 1.5, "middle": 4, "outer": 6, "seq": 3],
            ])
        // Unsubscribed: a change is not sent; the reply is the next thing on the wire.
        #expect(try watcher.call("unsubscribe", ["events": ["progress"]]) == ["events": []])
        try caller.call("progress.set", ["outer": 0])
        #expect(try watcher.call("progress.get") == ["inner": 1.5, "middle": 4, "outer": 0])
        #expect(watcher.pendingNotifications.isEmpty)
    }

    @Test func aFailingCallPublishesNothingAndChangesNothing() throws {
        let daemon = try DaemonProcess(files: Self.files.merging(["bad.js": "function() { progress.inner = 8; throw new Error('x') }"]) { a, _ in a })
        let watcher = try daemon.client()
        _ = try watcher.call("subscribe", ["events": ["progress"]])
        let caller = try daemon.client()
        #expect(throws: RPCError.self) { try caller.call("macro.call", ["name": "bad"]) }
        try caller.call("progress.set", ["outer": 1])
        // The first notification is the later, successful change: the failed one never showed.
        #expect(try watcher.waitFor("progress.changed") == ["inner": 0, "middle": 0, "outer": 1, "seq": 1])
        #expect(try caller.call("progress.get") == ["inner": 0, "middle": 0, "outer": 1])
    }

    @Test func logSubscribersSeeTheDaemonLog() throws {
        let daemon = try DaemonProcess(files: ["boom.js": "function() { throw new Error('kaput') }"])
        let client = try daemon.client()
        _ = try client.call("subscribe", ["events": ["log"]])
        _ = try? client.call("macro.call", ["name": "boom"])
        var log = try client.waitFor("log")
        while log["metadata"]["macro"] != "boom" { log = try client.waitFor("log") }
        #expect(log["level"] == "error")
        #expect(log["message"] == "Error: kaput")
        #expect(log["metadata"]["macro"] == "boom")
        #expect(log["metadata"]["line"] == "1")
        let recent = try #require(try client.call("log.recent", ["limit": 1]).arrayValue)
        #expect(recent.first?["message"] == "Error: kaput")
    }

    @Test func stateIsWrittenBeforeTheReplyAndSurvivesARestart() throws {
        let dir = TemporaryDirectory(prefix: "macrod")
        do {
            let daemon = try DaemonProcess(files: Self.files, dir: dir)
            let client = try daemon.client()
            try client.call("macro.call", ["name": "random"])
            // Written before the reply left: kill -9 now loses nothing.
            #expect(try StateStore(path: daemon.state).load() == .loaded(["inner": 1, "middle": 2, "outer": 3]))
            daemon.stop(signal: SIGKILL)
        }
        let again = try DaemonProcess(dir: dir)
        #expect(try again.client().call("progress.get") == ["inner": 1, "middle": 2, "outer": 3])
    }
}
