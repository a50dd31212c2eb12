import Foundation
import MacroEngineCore
import MacroRPC
import MacroTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// What a local user without the token could do to the dashboard's port.
@Suite("The dashboard bounds what a client without the token can hold", .serialized)
struct DashboardFloodTests {
    /// Item 4: 700 connections each sent `POST /rpc` with a 1 MiB body and held on; the bodies
    /// were buffered before the token check (RSS 91 -> 865 MiB). Now a request without the token
    /// is answered 401 from its head, before a byte of its body is read, and closed.
    @Test func aBodyWithoutTheTokenIsNeverBuffered() throws {
        let dashboard = try DashboardDaemon()
        let before = try dashboard.daemon.memoryKiB("VmRSS")
        var probes: [HTTPProbe] = []
        for _ in 0..<100 {
            let probe = try HTTPProbe(port: dashboard.port)
            // The head only: the body would follow if the server waited for it.
            try probe.write(Array("POST /rpc HTTP/1.1\r\nHost: 127.0.0.1:\(dashboard.port)\r\nContent-Type: application/json\r\nContent-Length: 1048576\r\n\r\n".utf8))
            try probe.write([UInt8](repeating: UInt8(ascii: " "), count: 65536))
            probes.append(probe)
        }
        for probe in probes {
            let reply = try probe.readResponse()
            #expect(reply.status == 401)
            #expect(reply.header("Connection") == "close")
        }
        let grown = try dashboard.daemon.memoryKiB("VmRSS") - before
        #expect(grown < 64 * 1024, "macrod grew by \(grown / 1024) MiB")
        // With the token, a body over max_line_bytes is refused from its Content-Length.
        let big = try HTTPProbe(port: dashboard.port)
        try big.write(Array("POST /rpc HTTP/1.1\r\nHost: 127.0.0.1:\(dashboard.port)\r\nAuthorization: Bearer \(dashboard.token)\r\nContent-Length: 104857600\r\n\r\n".utf8))
        #expect(try big.readResponse().status == 413)
    }

    /// Item 6: idle connections were never timed out and could use up macrod's descriptors.
    /// Now more than 128 dashboard connections are closed at once, and one that does not finish
    /// its request within 10 s is closed; the Unix socket is served all along.
    @Test func idleAndSlowConnectionsAreCappedAndTimedOut() throws {
        let dashboard = try DashboardDaemon()
        var probes: [HTTPProbe] = []
        for _ in 0..<160 { probes.append(try HTTPProbe(port: dashboard.port)) }
        // The ones past the cap are closed by the server right away: a read sees the end.
        var closed = 0
        for probe in probes.suffix(40) {
            probe.setReceiveTimeout(seconds: 2)
            do { _ = try probe.readResponse() } catch let error as HTTPProbe.ProbeError { if error.description == "connection closed" { closed += 1 } }
        }
        #expect(closed >= 32, "\(closed) of the 40 connections past the cap were closed")
        #expect(try dashboard.daemon.client().call("progress.get")["inner"] == 0)
        // Slowloris: half a head, then nothing; closed within the request timeout (10 s).
        probes.removeAll()
        let slow = try HTTPProbe(port: dashboard.port)
        try slow.write(Array("GET / HTTP/1.1\r\nHost: 127.0.0.1:\(dashboard.port)\r\nX-Slow: ".utf8))
        slow.setReceiveTimeout(seconds: 30)
        let ended = #expect(throws: HTTPProbe.ProbeError.self) { _ = try slow.readResponse() }
        // Closed by the server (not our own 30 s read timeout).
        #expect(ended?.description == "connection closed")
        // Once the idle ones are gone, the page is served again.
        #expect(try HTTPProbe.request(port: dashboard.port, "GET", "/config.json", headers: [dashboard.bearer]).status == 200)
    }

    /// Minor: with a valid token, `GET //evil.com/?token=T` redirected to `//evil.com/`. There is
    /// no redirect any more (the token in a query is no credential; the page reads it itself).
    @Test(arguments: ["//evil.example/", "/\\evil.example/", "http://evil.example/"])
    func theTokenInAQueryRedirectsNowhere(_ target: String) throws {
        let dashboard = try DashboardDaemon()
        let reply = try HTTPProbe.request(port: dashboard.port, "GET", "\(target)?token=\(dashboard.token)")
        #expect(reply.status == 401, "\(reply)")
        #expect(reply.header("Location") == nil)
    }
}

/// With the token, 1,000,000 `macro.list` frames sent without reading
/// were all accepted (RSS 63 -> 1,163 MiB), and 2 M pings whose pongs were never read took RSS
/// to 811 MiB. The WebSocket now has the socket's bounds.
@Suite("The WebSocket has the socket's backpressure", .serialized)
struct WebSocketBackpressureTests {
    /// Sends `frame` up to `count` times in chunks until the server stops reading (a send
    /// that waits 2 s); returns how many were sent.
    func flood(_ probe: HTTPProbe, _ frame: [UInt8], count: Int) -> Int {
        probe.setSendTimeout(seconds: 2)
        let chunk = Array(repeating: frame, count: 1000).flatMap { $0 }
        var sent = 0
        while sent < count {
            guard (try? probe.write(chunk)) != nil else { break }
            sent += 1000
        }
        return sent
    }

    @Test(arguments: [("text", UInt8(0x1)), ("ping", UInt8(0x9))])
    func aClientThatDoesNotReadIsNotReadFrom(_ kind: String, _ opcode: UInt8) throws {
        let dashboard = try DashboardDaemon()
        let before = try dashboard.daemon.memoryKiB("VmRSS")
        let probe = try HTTPProbe(port: dashboard.port)
        #expect(try probe.upgrade(port: dashboard.port, headers: [dashboard.bearer]).status == 101)
        let payload = opcode == 0x1 ? Array(#"{"jsonrpc":"2.0","id":1,"method":"macro.list"}"#.utf8) : Array("ping".utf8)
        let sent = flood(probe, HTTPProbe.frame(opcode: opcode, payload), count: 1_000_000)
        // Replies pile up unread, so reading stops; pings are answered by one pong at a time
        // and may all be read (they cost nothing but the reading).
        if opcode == 0x1 { #expect(sent < 1_000_000, "macrod read all of a \(kind) flood from a client that never reads") }
        let grown = try dashboard.daemon.memoryKiB("VmRSS") - before
        #expect(grown < 64 * 1024, "macrod grew by \(grown / 1024) MiB after \(sent) \(kind) frames")
        #expect(try dashboard.daemon.client().call("progress.get")["inner"] == 0)
    }
}
