import Foundation
import MacroEngineCore
import MacroRPC
import MacroTestSupport
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The new process closed the inherited TCP listener and bound again, and a
/// local process spinning on `bind` won the port (the dashboard then moved, or macrod exited).
/// The listening socket is now handed over like the Unix one: never closed, so never free.
@Suite("The dashboard's port is handed over across an engine restart", .serialized)
struct DashboardHandoverTests {
    @Test func aProcessSpinningOnBindNeverTakesThePortDuringARestart() throws {
        let dashboard = try DashboardDaemon(
            files: ["chain.js": "async function() { for (;;) await null; }"],
            config: "time_limit_ms: 300\nstall_grace_ms: 300\n")
        let port = dashboard.port
        let stop = Atomic<Bool>(false)
        let won = Atomic<Int>(0)
        let tries = Atomic<Int>(0)
        let done = DispatchSemaphore(value: 0)
        // The attacker: bind 127.0.0.1:PORT (SO_REUSEADDR, as a server would) until told to stop.
        Thread {
            defer { done.signal() }
            for _ in 0..<2_000_000 where !stop.load(ordering: .relaxed) {
                let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
                var one: Int32 = 1
                setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
                var address = sockaddr_in()
                address.sin_family = sa_family_t(AF_INET)
                address.sin_port = UInt16(port).bigEndian
                address.sin_addr.s_addr = inet_addr("127.0.0.1")
                let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
                if bound == 0, listen(fd, 1) == 0 { won.add(1, ordering: .relaxed) }
                tries.add(1, ordering: .relaxed)
                close(fd)
            }
        }.start()
        let run = try BinaryRunner.macro("run", "chain", "--socket", dashboard.daemon.socket)
        #expect(run.status == 75, "\(run)")
        // The new process serves at the same URL (the port never changed hands).
        var page: Int?
        let deadline = Date().addingTimeInterval(10)
        while page != 200, Date() < deadline {
            page = try? HTTPProbe.request(port: port, "GET", "/", headers: [dashboard.bearer]).status
        }
        stop.store(true, ordering: .relaxed)
        done.wait()
        #expect(tries.load(ordering: .relaxed) > 0)
        #expect(won.load(ordering: .relaxed) == 0, "another process bound the dashboard's port \(won.load(ordering: .relaxed)) times")
        #expect(page == 200, "\(dashboard.daemon.log)")
        #expect(try dashboard.daemon.client().call("engine.status")["dashboard"] == .string(dashboard.url))
        #expect(dashboard.daemon.log.contains("restarting the engine"))
    }
}

/// With `http: 127.0.0.1:0` every start picked a new port, and an open page
/// reconnected to the old one forever. A start without the dashboard left a
/// killed macrod's token and address files behind.
@Suite("The dashboard keeps its port across restarts", .serialized)
struct DashboardPortTests {
    @Test func aNewMacrodTakesTheLastPortWhenFreeAndAStartWithoutHTTPRemovesStaleFiles() throws {
        let dir = TemporaryDirectory(prefix: "macrod")
        let first = try DaemonProcess(extraArguments: ["--http", "127.0.0.1:0"], dir: dir)
        let firstURL = try #require(try first.client().call("engine.status")["dashboard"].stringValue)
        let port = try #require(URLComponents(string: firstURL)?.port)
        #expect(first.stop() == 0)
        let second = try DaemonProcess(extraArguments: ["--http", "127.0.0.1:0"], dir: dir)
        let secondURL = try #require(try second.client().call("engine.status")["dashboard"].stringValue)
        #expect(URLComponents(string: secondURL)?.port == port, "\(firstURL) then \(secondURL)")
        // kill -9 leaves the token and address files; a start without --http removes them.
        second.stop(signal: SIGKILL)
        #expect(FileManager.default.fileExists(atPath: dir.url("macrod.token")))
        let third = try DaemonProcess(dir: dir)
        #expect(!FileManager.default.fileExists(atPath: dir.url("macrod.token")))
        #expect(!FileManager.default.fileExists(atPath: dir.url("macrod.dashboard")))
        #expect(try third.client().call("engine.status")["dashboard"] == .null)
    }
}
