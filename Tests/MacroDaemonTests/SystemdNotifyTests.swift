import Foundation
import MacroEngineCore
import MacroTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `Type=notify` readiness and `WatchdogSec=` heartbeats, over a real
/// datagram socket standing in for systemd's.
@Suite("macrod speaks systemd's notify protocol")
struct SystemdNotifyTests {
    @Test func readinessThenHeartbeats() throws {
        let dir = TemporaryDirectory(prefix: "notify")
        let notify = try NotifySocket(path: dir.url("notify.sock"))
        let daemon = try DaemonProcess(
            files: ["one.js": "function() { return 1 }"],
            environment: ["NOTIFY_SOCKET": notify.path, "WATCHDOG_USEC": "200000"])
        var messages: [String] = []
        while messages.filter({ $0 == "WATCHDOG=1" }).count < 3, let message = notify.next() { messages.append(message) }
        #expect(messages.first?.hasPrefix("READY=1\nSTATUS=listening on \(daemon.socket)") == true, "\(messages)")
        #expect(messages.filter { $0 == "WATCHDOG=1" }.count == 3)
        #expect(try daemon.client().call("macro.call", ["name": "one"]) == 1)
    }
}
