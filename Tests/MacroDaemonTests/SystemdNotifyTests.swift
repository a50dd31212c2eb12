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
        // DaemonProcess gives macrod its NOTIFY_SOCKET, and waits for READY=1 on it.
        let daemon = try DaemonProcess(files: ["one.js": "function() { return 1 }"], environment: ["WATCHDOG_USEC": "200000"])
        #expect(daemon.startup.count == 1, "\(daemon.startup)")
        var messages = daemon.startup
        while messages.filter({ $0 == "WATCHDOG=1" }).count < 3, let message = daemon.notifications.next() { messages.append(message) }
        #expect(messages.first?.hasPrefix("READY=1\nSTATUS=listening on \(daemon.socket)") == true, "\(messages)")
        #expect(messages.filter { $0 == "WATCHDOG=1" }.count == 3)
        #expect(try daemon.client().call("macro.call", ["name": "one"]) == 1)
    }
}
