import Foundation
import MacroEngineCore
import MacroRPC
import MacroTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The dashboard's local security, over plain HTTP: the token, the Host and Origin checks, no
/// cookie, one-time codes, CSP and no CORS, the token file, and the bind address.
@Suite("Dashboard security", .serialized)
struct DashboardSecurityTests {
    @Test(arguments: [
        ("GET", "/config.json"), ("GET", "/metrics"), ("POST", "/rpc"), ("POST", "/code"), ("GET", "/ws"),
        ("GET", "/session"), ("GET", "/no-such-page"), ("OPTIONS", "/rpc"), ("OPTIONS", "/"),
    ])
    func everyRequestWithoutTheTokenIs401(method: String, path: String) throws {
        let dashboard = try DashboardDaemon()
        let reply = try HTTPProbe.request(port: dashboard.port, method, path, body: method == "POST" ? #"{"jsonrpc":"2.0","id":1,"method":"engine.status"}"# : "")
        #expect(reply.status == 401, "\(reply)")
        #expect(reply.header("WWW-Authenticate") == #"Bearer realm="macrod""#)
        #expect(!reply.body.contains(dashboard.token))
        #expect(!reply.headers.contains { $0.0.lowercased().hasPrefix("access-control-") })
    }

    /// The page's own files hold no secret: anyone who passes the Host and Origin checks gets
    /// them (a reload of the page has no credential to send: it keeps the token in sessionStorage).
    @Test(arguments: ["/", "/app.js", "/favicon.svg", "/codemirror/lib/codemirror.js"])
    func thePagesFilesNeedNoTokenAndHoldNone(path: String) throws {
        let dashboard = try DashboardDaemon()
        let reply = try HTTPProbe.request(port: dashboard.port, "GET", path)
        #expect(reply.status == 200, "\(reply)")
        #expect(!reply.body.contains(dashboard.token))
        #expect(reply.headers("Set-Cookie").isEmpty)
        // Still only from loopback names and this origin.
        #expect(try HTTPProbe.request(port: dashboard.port, "GET", path, host: "evil.example").status == 421)
        #expect(try HTTPProbe.request(port: dashboard.port, "GET", path, headers: [("Origin", "http://127.0.0.1:\(dashboard.port + 1)")]).status == 403)
    }

    @Test func aWrongTokenIs401InEveryForm() throws {
        let dashboard = try DashboardDaemon()
        let wrong = String(dashboard.token.dropLast()) + (dashboard.token.hasSuffix("0") ? "1" : "0")
        let attempts: [(String, [(String, String)])] = [
            ("/config.json", [("Authorization", "Bearer \(wrong)")]),
            ("/config.json", [("Authorization", "Bearer \(dashboard.token.dropLast())")]),
            ("/config.json", [("Authorization", "Basic \(dashboard.token)")]),
            ("/config.json", [("Sec-WebSocket-Protocol", "macrod, macrod.token.\(wrong)")]),
            ("/config.json", [("Sec-WebSocket-Protocol", "macrod.token.")]),
            ("/config.json?token=\(wrong)", []),
            ("/config.json?token=", []),
            ("/config.json", [("Cookie", "macrod_token_\(dashboard.port)=\(wrong)")]),
            ("/config.json", [("Cookie", "other=\(dashboard.token)")]),
            // A wrong credential is refused even for the page's public files.
            ("/", [("Authorization", "Bearer \(wrong)")]),
        ]
        for (path, headers) in attempts {
            let reply = try HTTPProbe.request(port: dashboard.port, "GET", path, headers: headers)
            #expect(reply.status == 401, "\(path) \(headers): \(reply)")
        }
    }

    /// Cookies are not port-scoped, so a token kept in one reaches every
    /// server on 127.0.0.1 (another local user's on another port) after one click. No response
    /// sets a cookie, and a cookie (or the query) carrying the right token is no credential.
    @Test func noResponseSetsACookieAndACookieCarriesNoCredential() throws {
        let dashboard = try DashboardDaemon()
        let cookie = ("Cookie", "macrod_token_\(dashboard.port)=\(dashboard.token)")
        // What a browser would send to another port's server, sent here, is refused.
        #expect(try HTTPProbe.request(port: dashboard.port, "GET", "/config.json", headers: [cookie]).status == 401)
        let rpc = try HTTPProbe.request(port: dashboard.port, "POST", "/rpc", headers: [cookie], body: #"{"jsonrpc":"2.0","id":1,"method":"progress.get"}"#)
        #expect(rpc.status == 401)
        #expect(rpc.body == "401 Unauthorized: open the URL that `macro dashboard` prints, or send Authorization: Bearer TOKEN\n")
        #expect(try HTTPProbe(port: dashboard.port).upgrade(port: dashboard.port, headers: [cookie]).status == 401)
        #expect(try HTTPProbe.request(port: dashboard.port, "GET", "/config.json?token=\(dashboard.token)").status == 401)
        #expect(try HTTPProbe.request(port: dashboard.port, "POST", "/code", headers: [cookie]).status == 401)
        // No response sets one: the page (with the token in its query, as engine.status's URL
        // has it), its files, the API with the token.
        var replies: [(String, HTTPReply)] = []
        for path in ["/", "/?token=\(dashboard.token)", "/app.js?token=\(dashboard.token)"] {
            replies.append((path, try HTTPProbe.request(port: dashboard.port, "GET", path)))
        }
        replies.append(("/config.json", try HTTPProbe.request(port: dashboard.port, "GET", "/config.json", headers: [dashboard.bearer])))
        let code = try HTTPProbe.request(port: dashboard.port, "POST", "/code", headers: [dashboard.bearer])
        replies.append(("/code", code))
        for (path, reply) in replies {
            #expect(reply.status == 200, "\(path): \(reply)")
            #expect(reply.headers("Set-Cookie").isEmpty, "\(path) sets a cookie: \(reply)")
        }
        // The page with the token in its query is the page: no redirect, no cookie (its script
        // takes the token from the address and keeps it in sessionStorage).
        #expect(replies[1].1.body == replies[0].1.body)
        let traded = try HTTPProbe.request(port: dashboard.port, "POST", "/session", body: #"{"code":"\#(try Self.code(in: code))"}"#)
        #expect(traded.status == 200)
        #expect(traded.headers("Set-Cookie").isEmpty)
    }

    /// The code of a `POST /code` reply, `{"code":"HEX","expiresInMs":60000}`.
    static func code(in reply: HTTPReply) throws -> String {
        let value = try JSONParser.parse(reply.body)
        return try #require(value["code"].stringValue, "\(reply)")
    }

    /// The URL `macro dashboard` opens carries a one-time code, which the page
    /// trades for the token once; a second trade (the URL read from a process list) gets nothing.
    @Test func aOneTimeCodeIsTradedForTheTokenOnceOnly() throws {
        let dashboard = try DashboardDaemon()
        let issued = try HTTPProbe.request(port: dashboard.port, "POST", "/code", headers: [dashboard.bearer])
        #expect(issued.status == 200)
        #expect(issued.header("Content-Type") == "application/json")
        let code = try Self.code(in: issued)
        #expect(code.count == 32 && code.allSatisfy(\.isHexDigit))
        #expect(issued.body == #"{"code":"\#(code)","expiresInMs":60000}"#)
        #expect(!issued.body.contains(dashboard.token))
        func trade(_ body: String, headers: [(String, String)] = []) throws -> HTTPReply {
            try HTTPProbe.request(port: dashboard.port, "POST", "/session", headers: [("Content-Type", "application/json")] + headers, body: body)
        }
        // From another origin (a page on another port), refused before the code is looked at.
        let foreign = try trade(#"{"code":"\#(code)"}"#, headers: [("Origin", "http://127.0.0.1:\(dashboard.port + 1)")])
        #expect(foreign.status == 403)
        let first = try trade(#"{"code":"\#(code)"}"#, headers: [("Origin", "http://127.0.0.1:\(dashboard.port)")])
        #expect(first.status == 200, "\(first)")
        #expect(first.body == #"{"token":"\#(dashboard.token)"}"#)
        #expect(first.header("Cache-Control") == "no-store")
        let second = try trade(#"{"code":"\#(code)"}"#)
        #expect(second.status == 401)
        #expect(second.body == "401 Unauthorized: this one-time code was already used; run `macro dashboard` again\n")
        #expect(!second.body.contains(dashboard.token))
        let unknown = try trade(#"{"code":"00000000000000000000000000000000"}"#)
        #expect(unknown.status == 401)
        #expect(unknown.body == "401 Unauthorized: unknown one-time code; run `macro dashboard` again\n")
        // The token itself is no code.
        #expect(try trade(#"{"code":"\#(dashboard.token)"}"#).status == 401)
        let garbage = try trade("code=1")
        #expect(garbage.status == 400)
        #expect(garbage.body == "400 Bad Request: send {\"code\": CODE}, the one-time code of the URL `macro dashboard` opened\n")
        // Without the token a body is small: answered 413 from the head, before a byte is read.
        let big = try trade(#"{"code":""# + String(repeating: "0", count: 2000) + #""}"#)
        #expect(big.status == 413)
        #expect(big.body == "413 Payload Too Large: at most 1024 bytes without the token\n")
        // Each code is new, and each works once.
        let other = try Self.code(in: try HTTPProbe.request(port: dashboard.port, "POST", "/code", headers: [dashboard.bearer]))
        #expect(other != code)
        #expect(try trade(#"{"code":"\#(other)"}"#).status == 200)
        #expect(try trade(#"{"code":"\#(other)"}"#).status == 401)
    }

    @Test func aHostThatIsNotLoopbackIs421EvenWithTheToken() throws {
        let dashboard = try DashboardDaemon()
        for host in [
            "evil.example", "evil.example:\(dashboard.port)", "localhost.evil.example", "127.0.0.1.evil.example", "192.168.0.10:\(dashboard.port)", "[::2]:\(dashboard.port)",
        ] {
            let reply = try HTTPProbe.request(port: dashboard.port, "GET", "/", host: host, headers: [dashboard.bearer])
            #expect(reply.status == 421, "Host: \(host): \(reply)")
        }
        for host in ["127.0.0.1:\(dashboard.port)", "localhost:\(dashboard.port)", "[::1]:\(dashboard.port)", "127.0.0.2"] {
            let reply = try HTTPProbe.request(port: dashboard.port, "GET", "/", host: host, headers: [dashboard.bearer])
            #expect(reply.status == 200, "Host: \(host): \(reply)")
        }
        // HTTP/1.1 without a Host header.
        let probe = try HTTPProbe(port: dashboard.port)
        try probe.write(Array("GET / HTTP/1.1\r\nAuthorization: Bearer \(dashboard.token)\r\n\r\n".utf8))
        #expect(try probe.readResponse().status == 421)
    }

    @Test func aWebSocketUpgradeFromAnotherOriginIsRefused() throws {
        let dashboard = try DashboardDaemon()
        for origin in ["http://evil.example", "null", "http://127.0.0.1:\(dashboard.port + 1)", "https://127.0.0.1:\(dashboard.port)"] {
            let reply = try HTTPProbe(port: dashboard.port).upgrade(port: dashboard.port, headers: [dashboard.bearer, ("Origin", origin)])
            #expect(reply.status == 403, "Origin: \(origin): \(reply)")
            #expect(reply.header("Upgrade") == nil)
        }
        let anonymous = try HTTPProbe(port: dashboard.port).upgrade(port: dashboard.port, headers: [("Origin", "http://127.0.0.1:\(dashboard.port)")])
        #expect(anonymous.status == 401)
        let same = try HTTPProbe(port: dashboard.port).upgrade(port: dashboard.port, headers: [dashboard.bearer, ("Origin", "http://127.0.0.1:\(dashboard.port)")])
        #expect(same.status == 101, "\(same)")
        #expect(same.header("Sec-WebSocket-Accept") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
        // A cross-origin plain request is refused too.
        let post = try HTTPProbe.request(
            port: dashboard.port, "POST", "/rpc", headers: [dashboard.bearer, ("Origin", "http://evil.example")],
            body: #"{"jsonrpc":"2.0","id":1,"method":"progress.get"}"#)
        #expect(post.status == 403)
    }

    /// The page is what `Sources/MacroHTTP/Web/` holds, byte for byte (the EmbedWebAssets plugin
    /// compiles the files into macrod), with each file's content type and the same headers.
    @Test(arguments: [
        ("/", "index.html", "text/html; charset=utf-8"), ("/app.js", "app.js", "text/javascript; charset=utf-8"),
        ("/editor.js", "editor.js", "text/javascript; charset=utf-8"), ("/stats.js", "stats.js", "text/javascript; charset=utf-8"),
        ("/history.js", "history.js", "text/javascript; charset=utf-8"), ("/records.js", "records.js", "text/javascript; charset=utf-8"),
        ("/app.css", "app.css", "text/css; charset=utf-8"), ("/favicon.svg", "favicon.svg", "image/svg+xml"),
    ])
    func thePageIsTheWebFolder(path: String, file: String, contentType: String) throws {
        let dashboard = try DashboardDaemon()
        let reply = try HTTPProbe.request(port: dashboard.port, "GET", path)
        let source = try #require(FileManager.default.contents(atPath: repositoryRoot + "/Sources/MacroHTTP/Web/" + file))
        #expect(reply.status == 200)
        #expect(reply.header("Content-Type") == contentType)
        #expect(reply.header("Content-Length") == String(source.count))
        #expect(Array(reply.body.utf8) == Array(source), "\(path) differs from Web/\(file)")
        #expect(reply.header("Cache-Control") == "no-store")
        #expect(reply.header("Content-Security-Policy")?.hasPrefix("default-src 'none'; script-src 'self';") == true)
    }

    @Test func thePageHasAStrictPolicyAndNoInlineCode() throws {
        let dashboard = try DashboardDaemon()
        let page = try HTTPProbe.request(port: dashboard.port, "GET", "/")
        #expect(page.status == 200)
        #expect(page.header("Content-Type") == "text/html; charset=utf-8")
        #expect(page.body.contains(#"<script src="/app.js" defer></script>"#))
        // No inline script or style anywhere: every <script> has a src, no style= or <style>.
        #expect(page.body.components(separatedBy: "<script").count - 1 == page.body.components(separatedBy: "<script src=").count - 1)
        #expect(!page.body.contains("<style") && !page.body.contains(" style=") && !page.body.contains(" onclick="))
        let csp = try #require(page.header("Content-Security-Policy"))
        #expect(
            csp
                == "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self' ws://127.0.0.1:\(dashboard.port); base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
        )
        #expect(page.header("X-Frame-Options") == "DENY")
        #expect(page.header("X-Content-Type-Options") == "nosniff")
        #expect(page.header("Cache-Control") == "no-store")
        #expect(!page.headers.contains { $0.0.lowercased().hasPrefix("access-control-") })
    }

    @Test func postRPCAnswersOneShotCallsLikeTheSocket() throws {
        let dashboard = try DashboardDaemon()
        func post(_ body: String) throws -> HTTPReply {
            try HTTPProbe.request(port: dashboard.port, "POST", "/rpc", headers: [dashboard.bearer, ("Content-Type", "application/json")], body: body)
        }
        let call = try post(#"{"jsonrpc":"2.0","id":1,"method":"macro.call","params":{"name":"bump","args":["inner",2]}}"#)
        #expect(call.status == 200)
        #expect(call.header("Content-Type") == "application/json")
        #expect(call.body == #"{"jsonrpc":"2.0","id":1,"result":2}"#)
        #expect(
            try post(#"[{"jsonrpc":"2.0","id":"a","method":"progress.get"},{"jsonrpc":"2.0","id":"b","method":"nope"}]"#).body
                == #"[{"jsonrpc":"2.0","id":"a","result":{"inner":2,"middle":0,"outer":0}},{"jsonrpc":"2.0","id":"b","error":{"code":-32601,"message":"Method not found: nope"}}]"#)
        let garbage = try post("{not json")
        #expect(garbage.status == 200)
        #expect(garbage.body.hasPrefix(#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"#))
        let notification = try post(#"{"jsonrpc":"2.0","method":"progress.set","params":{"outer":4}}"#)
        #expect(notification.status == 204)
        #expect(try dashboard.daemon.client().call("progress.get")["outer"] == .number(4))
        let get = try HTTPProbe.request(port: dashboard.port, "GET", "/rpc", headers: [dashboard.bearer])
        #expect(get.status == 405)
        #expect(get.header("Allow") == "POST")
    }

    @Test func aBodyLongerThanMaxLineBytesIs413() throws {
        let dashboard = try DashboardDaemon(config: "max_line_bytes: 1024\n")
        let source = String(repeating: " ", count: 1100)
        let body = #"{"jsonrpc":"2.0","id":1,"method":"macro.save","params":{"name":"big","source":"\#(source)"}}"#
        let reply = try HTTPProbe.request(port: dashboard.port, "POST", "/rpc", headers: [dashboard.bearer], body: body)
        #expect(reply.status == 413)
        #expect(reply.body == "413 Payload Too Large: at most 1024 bytes (config: max_line_bytes)\n")
        #expect(!FileManager.default.fileExists(atPath: dashboard.daemon.macros + "/big.js"))
        let small = try HTTPProbe.request(port: dashboard.port, "POST", "/rpc", headers: [dashboard.bearer], body: #"{"jsonrpc":"2.0","id":2,"method":"progress.get"}"#)
        #expect(small.body == #"{"jsonrpc":"2.0","id":2,"result":{"inner":0,"middle":0,"outer":0}}"#)
    }

    @Test func theWebSocketCarriesTheSameJSONRPCWithNotifications() throws {
        let dashboard = try DashboardDaemon()
        let socket = try HTTPProbe(port: dashboard.port)
        // As the page sends it: a browser's WebSocket cannot send headers, so the token is a
        // subprotocol entry; the server names only `macrod` in its answer, never the token.
        let upgraded = try socket.upgrade(port: dashboard.port, headers: [("Sec-WebSocket-Protocol", "macrod, macrod.token.\(dashboard.token)")])
        #expect(upgraded.status == 101)
        #expect(upgraded.headers("Sec-WebSocket-Protocol") == ["macrod"])
        #expect(upgraded.headers("Set-Cookie").isEmpty)
        // With the bearer header and no subprotocol offered, none is named.
        let bearer = try HTTPProbe(port: dashboard.port).upgrade(port: dashboard.port, headers: [dashboard.bearer])
        #expect(bearer.status == 101)
        #expect(bearer.header("Sec-WebSocket-Protocol") == nil)
        try socket.sendText(#"{"jsonrpc":"2.0","id":1,"method":"subscribe","params":{"events":["progress"]}}"#)
        #expect(try socket.readText() == #"{"jsonrpc":"2.0","id":1,"result":{"events":["progress"]}}"#)
        // A change made through the Unix socket reaches the WebSocket subscriber.
        let unix = try dashboard.daemon.client()
        _ = try unix.call("progress.set", ["middle": 6])
        #expect(try socket.readText() == #"{"jsonrpc":"2.0","method":"progress.changed","params":{"inner":0,"middle":6,"outer":0,"seq":1}}"#)
        try socket.sendText(#"{"jsonrpc":"2.0","id":2,"method":"macro.call","params":{"name":"bump","args":["outer",3]}}"#)
        let reply = try socket.readJSON { $0["id"] == .number(2) }
        #expect(reply.jsonText() == #"{"jsonrpc":"2.0","id":2,"result":3}"#)
        try socket.sendText("[1]")
        #expect(try socket.readText() == #"[{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: expected a JSON object"}}]"#)
        // This WebSocket and the Unix client above; a client of DashboardDaemon's start that
        // just hung up may still be counted for a moment (bounded poll).
        var status: MacroValue = .null
        for id in 3..<200 {
            try socket.sendText(#"{"jsonrpc":"2.0","id":"# + "\(id)" + #","method":"engine.status"}"#)
            status = try socket.readJSON { $0["id"] == .number(Double(id)) }
            if status["result"]["connections"] == .number(2) { break }
        }
        #expect(status["result"]["connections"] == .number(2))
        #expect(status["result"]["dashboard"] == .string(dashboard.url))
        _ = unix
    }

    @Test func anUnmaskedClientFrameClosesTheWebSocketWithAProtocolError() throws {
        let dashboard = try DashboardDaemon()
        let socket = try HTTPProbe(port: dashboard.port)
        #expect(try socket.upgrade(port: dashboard.port, headers: [dashboard.bearer]).status == 101)
        // A call that would change a value, sent unmasked: refused unread.
        let payload = Array(#"{"jsonrpc":"2.0","id":1,"method":"progress.set","params":{"inner":4}}"#.utf8)
        try socket.write([0x81, UInt8(payload.count)] + payload)
        let header = try socket.take(2)
        #expect(header[0] == 0x88)
        #expect(try socket.take(Int(header[1] & 0x7F)) == [0x03, 0xEA])
        #expect(throws: (any Error).self) { try socket.take(1) }
        #expect(try dashboard.daemon.client().call("progress.get") == ["inner": 0, "middle": 0, "outer": 0])
    }

    @Test func theTokenFileIsPrivateAndRemovedOnShutdown() throws {
        let dashboard = try DashboardDaemon()
        let path = dashboard.daemon.dir.url("macrod.token")
        var info = stat()
        #expect(stat(path, &info) == 0)
        #expect(info.st_mode & 0o777 == 0o600)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == dashboard.token + "\n")
        #expect(dashboard.token.count == 64 && dashboard.token.allSatisfy(\.isHexDigit))
        #expect(dashboard.url == "http://127.0.0.1:\(dashboard.port)/?token=\(dashboard.token)")
        let other = try DashboardDaemon()
        #expect(other.token != dashboard.token)
        #expect(dashboard.daemon.stop() == 0)
        #expect(!FileManager.default.fileExists(atPath: path))
        #expect(!FileManager.default.fileExists(atPath: dashboard.daemon.dir.url("macrod.dashboard")))
    }

    @Test func aStalledEngineRestartKeepsTheDashboardURL() throws {
        // An endless chain of promise jobs stalls the engine; macrod re-executes itself (same pid).
        let dashboard = try DashboardDaemon(
            files: ["chain.js": "async function() {\n    for (;;) { await null; }\n}\n"],
            config: "time_limit_ms: 300\nstall_grace_ms: 300\n")
        // A WebSocket open on the old process (bounded retries: a loaded machine may drop a first try).
        var opened: (probe: HTTPProbe, status: Int)?
        let openBy = Date().addingTimeInterval(10)
        while opened?.status != 101, Date() < openBy {
            if let probe = try? HTTPProbe(port: dashboard.port), let reply = try? probe.upgrade(port: dashboard.port, headers: [dashboard.bearer]) {
                opened = (probe, reply.status)
            }
        }
        let socket = try #require(opened?.probe)
        #expect(opened?.status == 101)
        let run = try BinaryRunner.macro("run", "chain", "--socket", dashboard.daemon.socket)
        #expect(run.status == 75, "\(run)")
        #expect(run.stderr.contains("the engine was restarted"), "\(run)")
        // The old process's WebSocket is gone with it; the new one answers at the same URL, same token.
        #expect(throws: HTTPProbe.ProbeError.self) { _ = try socket.readText() }
        // A connection made while the old process hands over may be reset: ask again, for 10 s at most.
        var status: MacroValue = .null
        let deadline = Date().addingTimeInterval(10)
        while status == .null, Date() < deadline {
            status = (try? dashboard.daemon.client().call("engine.status")) ?? .null
        }
        #expect(status["pid"] == .number(Double(dashboard.daemon.pid)), "\(dashboard.daemon.log)")
        #expect(status["dashboard"] == .string(dashboard.url))
        // The HTTP port gets a window of its own (the new process starts its dashboard after the
        // socket answers; on a loaded machine that takes seconds): a connection the old process
        // took may be closed; the new one answers within 10 s.
        var page: Int?, upgrade: Int?
        let httpDeadline = Date().addingTimeInterval(10)
        while page != 200 || upgrade != 101, Date() < httpDeadline {
            page = try? HTTPProbe.request(port: dashboard.port, "GET", "/", headers: [dashboard.bearer]).status
            upgrade = try? HTTPProbe(port: dashboard.port).upgrade(port: dashboard.port, headers: [dashboard.bearer]).status
        }
        #expect(page == 200, "\(dashboard.daemon.log)")
        #expect(upgrade == 101, "\(dashboard.daemon.log)")
        #expect(try String(contentsOfFile: dashboard.daemon.dir.url("macrod.token"), encoding: .utf8) == dashboard.token + "\n")
        #expect(try String(contentsOfFile: dashboard.daemon.dir.url("macrod.dashboard"), encoding: .utf8) == "http://127.0.0.1:\(dashboard.port)/\n")
    }

    @Test func codeMirrorIsServedFromItsDebianFolderAndNothingElse() throws {
        let dashboard = try DashboardDaemon()
        // make test installs libjs-codemirror: its absence is a failure here, not a skip.
        let script = try HTTPProbe.request(port: dashboard.port, "GET", "/codemirror/lib/codemirror.js", headers: [dashboard.bearer])
        #expect(script.status == 200, "is libjs-codemirror installed? \(script.status)")
        #expect(script.header("Content-Type") == "text/javascript; charset=utf-8")
        let config = try HTTPProbe.request(port: dashboard.port, "GET", "/config.json", headers: [dashboard.bearer])
        #expect(config.body == #"{"channels":[{"name":"inner","min":0,"max":10},{"name":"middle","min":0,"max":10},{"name":"outer","min":0,"max":10}],"codemirror":true}"#)
        for path in [
            "/codemirror/../../../etc/passwd", "/codemirror/lib/../../../../etc/passwd", "/codemirror/.hidden.js", "/codemirror/mode/javascript/index.html", "/codemirror/",
        ] {
            let reply = try HTTPProbe.request(port: dashboard.port, "GET", path, headers: [dashboard.bearer])
            #expect(reply.status == 404, "\(path): \(reply.status)")
        }
    }

    @Test func aNonLoopbackAddressIsRefusedWithoutHTTPAllowRemote() throws {
        let dir = TemporaryDirectory(prefix: "macrod-remote")
        try FileManager.default.createDirectory(atPath: dir.url("macros"), withIntermediateDirectories: true)
        let result = try BinaryRunner.run("macrod", ["--socket", dir.url("d.sock"), "--macros", dir.url("macros"), "--state", dir.url("s.json"), "--http", "0.0.0.0:0"])
        #expect(result.status == 78, "\(result)")
        #expect(
            result.stderr.contains("http: 0.0.0.0:0 is not a loopback address; the dashboard listens on 127.0.0.1, ::1 or localhost unless the config sets http_allow_remote: true")
        )
        #expect(!FileManager.default.fileExists(atPath: dir.url("d.sock")))
        #expect(!FileManager.default.fileExists(atPath: dir.url("d.token")))
        let usage = try BinaryRunner.run("macrod", ["--socket", dir.url("d.sock"), "--http", "8080"])
        #expect(usage.status == 64)
        #expect(usage.stderr.contains("--http must be HOST:PORT such as 127.0.0.1:8080 or [::1]:0, got '8080'"))
    }

    @Test(arguments: [
        ("http: 8080", "http"), ("http: 'localhost:70000'", "http"), ("http: '[::1]'", "http"), ("http: ':80'", "http"),
        ("http_allow_remote: 'yes'", "http_allow_remote"),
    ])
    func badHTTPConfigNamesTheKey(yaml: String, key: String) {
        #expect {
            _ = try MacroConfig.parse(yaml, file: "/tmp/macroengine.yaml")
        } throws: { error in
            (error as? ConfigError)?.key == key
        }
    }

    @Test func goodHTTPConfigParses() throws {
        let config = try MacroConfig.parse("http: '[::1]:0'\nhttp_allow_remote: true\n", file: "/tmp/macroengine.yaml")
        #expect(config.http == HTTPAddress(host: "::1", port: 0))
        #expect(config.httpAllowRemote)
        #expect(try MacroConfig.parse("http: ''\n", file: "/tmp/m.yaml").http == nil)
        #expect(try MacroConfig.parse("log_level: info\n", file: "/tmp/m.yaml").http == nil)
    }
}

/// `macro dashboard` (a one-time URL, on the browser's command line too) and `engine.status`'s `dashboard`.
@Suite("macro dashboard", .serialized)
struct DashboardCommandTests {
    /// `http://127.0.0.1:PORT/?code=` and 32 hex digits: the code, or nil when `url` is not that.
    static func code(in url: String, port: Int) -> String? {
        let prefix = "http://127.0.0.1:\(port)/?code="
        guard url.hasPrefix(prefix) else { return nil }
        let code = url.dropFirst(prefix.count)
        return code.count == 32 && code.allSatisfy(\.isHexDigit) ? String(code) : nil
    }

    static func trade(_ code: String, port: Int) throws -> HTTPReply {
        try HTTPProbe.request(port: port, "POST", "/session", body: #"{"code":"\#(code)"}"#)
    }

    @Test func itPrintsAOneTimeURLThatWorksOnceAndHoldsNoToken() throws {
        let dashboard = try DashboardDaemon()
        let plain = try BinaryRunner.macro("dashboard", "--socket", dashboard.daemon.socket, environment: ["BROWSER": "/bin/false"])
        #expect(plain.status == 0, "\(plain)")
        #expect(!plain.stdout.contains(dashboard.token))
        #expect(plain.stdout.hasSuffix("\n") && plain.stdout.filter { $0 == "\n" }.count == 1)
        let code = try #require(Self.code(in: String(plain.stdout.dropLast()), port: dashboard.port), "\(plain.stdout)")
        let json = try BinaryRunner.macro("dashboard", "--socket", dashboard.daemon.socket, "--json")
        let jsonCode = try #require(Self.code(in: try JSONParser.parse(json.stdout)["url"].stringValue ?? "", port: dashboard.port), "\(json)")
        #expect(json.stdout == #"{"url":"http://127.0.0.1:\#(dashboard.port)/?code=\#(jsonCode)","expiresInMs":60000}"# + "\n")
        #expect(jsonCode != code)
        for code in [code, jsonCode] {
            #expect(try Self.trade(code, port: dashboard.port).body == #"{"token":"\#(dashboard.token)"}"#)
            #expect(try Self.trade(code, port: dashboard.port).status == 401)
        }
    }

    /// `$BROWSER URL`'s command line is in /proc/PID/cmdline, which every
    /// local user can read. On a terminal (here script(1)'s pseudo-terminal) `macro dashboard`
    /// opens the browser with a one-time code, never the token; whoever reads it after the page
    /// traded it gets nothing.
    @Test func theBrowsersCommandLineHoldsNoToken() throws {
        let dashboard = try DashboardDaemon()
        let fifo = dashboard.daemon.dir.url("browser-argv")
        #expect(mkfifo(fifo, 0o600) == 0)
        // Opened before the browser runs, without blocking: the recorder's open then succeeds at once.
        let reader = open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        #expect(reader >= 0)
        defer { close(reader) }
        let recorder = try dashboard.daemon.dir.write("browser", "#!/bin/sh\nprintf '%s\\n' \"$@\" > '\(fifo)'\n")
        #expect(chmod(recorder, 0o755) == 0)
        let command = "\(BinaryRunner.binDirectory)/macro dashboard --socket '\(dashboard.daemon.socket)'"
        let run = try BinaryRunner.run("/usr/bin/script", ["-qec", command, "/dev/null"], environment: ["BROWSER": recorder])
        #expect(run.status == 0, "\(run)")
        let argv = try Self.readUntilClosed(reader).split(separator: "\n").map(String.init)
        #expect(argv.count == 1, "\(argv)")
        #expect(!argv.joined().contains(dashboard.token), "\(argv)")
        let code = try #require(argv.first.flatMap { Self.code(in: $0, port: dashboard.port) }, "\(argv)")
        // The URL printed on the terminal is the one opened.
        #expect(run.stdout.replacingOccurrences(of: "\r", with: "") == argv[0] + "\n")
        // The page trades it; an attacker who read it from the process list is too late.
        #expect(try Self.trade(code, port: dashboard.port).body == #"{"token":"\#(dashboard.token)"}"#)
        let late = try Self.trade(code, port: dashboard.port)
        #expect(late.status == 401)
        #expect(late.body == "401 Unauthorized: this one-time code was already used; run `macro dashboard` again\n")
    }

    /// On a terminal where xdg-open finds no browser (it exits 3), `macro
    /// dashboard` printed the URL and exited 0 in silence. It says why, repeats the URL with how
    /// long its one-time code lasts, and exits 71; a command that fails otherwise is named too.
    @Test func whenNoBrowserOpensItSaysSoWithTheURLAndExits71() throws {
        let dashboard = try DashboardDaemon()
        let tools = dashboard.daemon.dir.url("tools")
        let xdgOpen = try dashboard.daemon.dir.write("tools/xdg-open", "#!/bin/sh\nexit 3\n")
        #expect(chmod(xdgOpen, 0o755) == 0)
        let command = "\(BinaryRunner.binDirectory)/macro dashboard --socket '\(dashboard.daemon.socket)'"
        let path = "\(tools):/usr/bin:/bin"
        for (browser, reason) in [("", "xdg-open exited with 3: it found no browser (set $BROWSER, or install one)"), ("/bin/false", "/bin/false exited with 1")] {
            let run = try BinaryRunner.run("/usr/bin/script", ["-qec", command, "/dev/null"], environment: ["BROWSER": browser, "PATH": path])
            #expect(run.status == 71, "\(run)")
            let lines = run.stdout.replacingOccurrences(of: "\r", with: "").split(separator: "\n").map(String.init)
            let url = try #require(lines.first, "\(run)")
            #expect(Self.code(in: url, port: dashboard.port) != nil, "\(run)")
            #expect(
                lines == [
                    url, "macro dashboard: \(reason)",
                    "macro dashboard: could not open a browser; open this URL within 60 s: \(url)",
                ], "\(run)")
        }
    }

    /// Everything written to the FIFO `fd` until its writer closes it (10 s at most per wait).
    static func readUntilClosed(_ fd: Int32) throws -> String {
        var bytes: [UInt8] = []
        while true {
            var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&entry, 1, 10_000) == 1 else { throw HTTPProbe.ProbeError("the browser was not started within 10 s") }
            var buffer = [UInt8](repeating: 0, count: 4096)
            let count = read(fd, &buffer, buffer.count)
            if count == 0 { return String(decoding: bytes, as: UTF8.self) }
            if count < 0, errno == EAGAIN { continue }
            guard count > 0 else { throw HTTPProbe.ProbeError("read failed: \(String(cString: strerror(errno)))") }
            bytes += buffer[..<count]
        }
    }

    @Test func withoutADashboardItExits69AndSaysHowToTurnItOn() throws {
        let daemon = try DaemonProcess()
        #expect(try daemon.client().call("engine.status")["dashboard"] == .null)
        let result = try BinaryRunner.macro("dashboard", "--socket", daemon.socket)
        #expect(result.status == 69)
        #expect(result.stdout.isEmpty)
        #expect(result.stderr == "macro dashboard: macrod serves no dashboard; start it with --http 127.0.0.1:0, or set http: \"127.0.0.1:0\" in its config\n")
    }
}
