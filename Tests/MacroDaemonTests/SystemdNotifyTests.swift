import Foundation
import MacroEngineCore
import MacroTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Issue #10, item 2: `Type=notify` readiness and `WatchdogSec=` heartbeats, over a real
/// datagram socket standing in for systemd's.
@Suite("macrod speaks systemd's notify protocol")
struct SystemdNotifyTests {
    /// A bound AF_UNIX datagram socket collecting what macrod sends.
    final class NotifySocket {
        let fd: Int32
        let path: String
        init(path: String) throws {
            self.path = path
            fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
            guard bound == 0 else { throw POSIXError(.EADDRINUSE) }
            var timeout = timeval(tv_sec: 10, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        }
        deinit { close(fd) }
        /// The next datagram (nil after 10 s of silence).
        func next() -> String? {
            var buffer = [UInt8](repeating: 0, count: 4096)
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            return n > 0 ? String(decoding: buffer[..<n], as: UTF8.self) : nil
        }
    }

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
