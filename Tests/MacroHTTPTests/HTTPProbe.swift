import Foundation
import MacroEngineCore
import MacroRPC
import MacroTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// One HTTP response as received on the wire.
struct HTTPReply: CustomStringConvertible {
    var status: Int
    var headers: [(String, String)]
    var body: String

    /// The first value of `name` (case-insensitive).
    func header(_ name: String) -> String? { headers.first { $0.0.lowercased() == name.lowercased() }?.1 }
    /// Every value of `name`.
    func headers(_ name: String) -> [String] { headers.filter { $0.0.lowercased() == name.lowercased() }.map(\.1) }

    var description: String { "\(status)\n\(headers.map { "\($0.0): \($0.1)" }.joined(separator: "\n"))\n\n\(body)" }
}

/// A plain TCP client for the dashboard: exact request bytes (any Host, Origin or Upgrade
/// header), no HTTP library in between; a minimal WebSocket client for `/ws`.
final class HTTPProbe {
    private let fd: Int32
    private var pending: [UInt8] = []

    init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else { throw ProbeError("cannot connect to 127.0.0.1:\(port): \(String(cString: strerror(errno)))") }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    /// How long a write waits for room before it fails (forever by default).
    func setSendTimeout(seconds: Int) {
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    /// One masked client frame with `opcode` (0x1 text, 0x9 ping) and a short payload (< 126 bytes).
    static func frame(opcode: UInt8, _ payload: [UInt8]) -> [UInt8] {
        let mask: [UInt8] = [0x12, 0x34, 0x56, 0x78]
        return [0x80 | opcode, 0x80 | UInt8(payload.count)] + mask + payload.enumerated().map { $0.element ^ mask[$0.offset % 4] }
    }

    /// How long a read waits before it fails with "recv failed" (10 s by default).
    func setReceiveTimeout(seconds: Int) {
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    struct ProbeError: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    /// Sends a request and reads its response.
    static func request(port: Int, _ method: String, _ path: String, host: String? = nil, headers: [(String, String)] = [], body: String = "") throws -> HTTPReply {
        let probe = try HTTPProbe(port: port)
        try probe.send(method, path, host: host ?? "127.0.0.1:\(port)", headers: headers, body: body)
        return try probe.readResponse()
    }

    func send(_ method: String, _ path: String, host: String, headers: [(String, String)], body: String) throws {
        var text = "\(method) \(path) HTTP/1.1\r\nHost: \(host)\r\n"
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        if !body.isEmpty || method == "POST" { text += "Content-Length: \(body.utf8.count)\r\n" }
        text += "\r\n" + body
        try write(Array(text.utf8))
    }

    func write(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { throw ProbeError("send failed: \(String(cString: strerror(errno)))") }
            offset += sent
        }
    }

    private func fill() throws {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { throw ProbeError(count == 0 ? "connection closed" : "recv failed: \(String(cString: strerror(errno)))") }
        pending += buffer[..<count]
    }

    func take(_ count: Int) throws -> [UInt8] {
        while pending.count < count { try fill() }
        defer { pending.removeFirst(count) }
        return Array(pending[..<count])
    }

    /// Reads one response head and its Content-Length body.
    func readResponse() throws -> HTTPReply {
        let terminator = Array("\r\n\r\n".utf8)
        var end: Int?
        while end == nil {
            if let index = (0..<max(0, pending.count - 3)).first(where: { Array(pending[$0..<$0 + 4]) == terminator }) { end = index } else { try fill() }
        }
        let head = String(decoding: try take(end! + 4), as: UTF8.self)
        var lines = head.components(separatedBy: "\r\n").filter { !$0.isEmpty }
        let statusLine = lines.removeFirst().split(separator: " ")
        let headers = lines.map { line -> (String, String) in
            let parts = line.split(separator: ":", maxSplits: 1)
            return (String(parts[0]), parts.count > 1 ? parts[1].trimmingCharacters(in: .whitespaces) : "")
        }
        var reply = HTTPReply(status: Int(statusLine[1]) ?? 0, headers: headers, body: "")
        if let length = reply.header("Content-Length").flatMap(Int.init), length > 0 {
            reply.body = String(decoding: try take(length), as: UTF8.self)
        }
        return reply
    }

    // MARK: WebSocket

    /// Sends the upgrade request for `/ws`; returns the response (101 when upgraded).
    func upgrade(port: Int, headers: [(String, String)]) throws -> HTTPReply {
        try send(
            "GET", "/ws", host: "127.0.0.1:\(port)",
            headers: [
                ("Connection", "Upgrade"), ("Upgrade", "websocket"), ("Sec-WebSocket-Version", "13"),
                ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
            ] + headers, body: "")
        return try readResponse()
    }

    /// Sends one masked text frame (clients must mask).
    func sendText(_ text: String) throws {
        let payload = Array(text.utf8)
        var frame: [UInt8] = [0x81]
        if payload.count < 126 {
            frame.append(0x80 | UInt8(payload.count))
        } else if payload.count < 65_536 {
            frame.append(0x80 | 126)
            frame += [UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        } else {
            frame.append(0x80 | 127)
            frame += (0..<8).reversed().map { UInt8((payload.count >> ($0 * 8)) & 0xFF) }
        }
        let mask: [UInt8] = [0x12, 0x34, 0x56, 0x78]
        frame += mask
        frame += payload.enumerated().map { $0.element ^ mask[$0.offset % 4] }
        try write(frame)
    }

    /// Reads the next text message (server frames are not masked; control frames are skipped).
    func readText() throws -> String {
        while true {
            let header = try take(2)
            var length = Int(header[1] & 0x7F)
            if length == 126 { length = try take(2).reduce(0) { $0 << 8 | Int($1) } }
            if length == 127 { length = try take(8).reduce(0) { $0 << 8 | Int($1) } }
            let payload = try take(length)
            if header[0] & 0x0F == 0x1 { return String(decoding: payload, as: UTF8.self) }
        }
    }

    /// Reads text messages until one decodes to a JSON value accepted by `matching`.
    func readJSON(until matching: (MacroValue) -> Bool) throws -> MacroValue {
        while true {
            let value = try JSONParser.parse(Array(try readText().utf8), maximumDepth: 64)
            if matching(value) { return value }
        }
    }
}

/// macrod with its dashboard on a free loopback port, and what `engine.status` says about it.
final class DashboardDaemon {
    let daemon: DaemonProcess
    let url: String
    let port: Int
    let token: String

    init(
        files: [String: String] = ["bump.js": "function(channel, amount) {\n    progress[channel] += (amount === undefined ? 1 : amount);\n    return progress[channel];\n}\n"],
        config: String? = nil, http: String = "127.0.0.1:0", environment: [String: String] = [:]
    ) throws {
        daemon = try DaemonProcess(files: files, config: config, extraArguments: ["--http", http], environment: environment)
        let status = try daemon.client().call("engine.status")
        guard let url = status["dashboard"].stringValue,
            let components = URLComponents(string: url), let port = components.port,
            let token = components.queryItems?.first(where: { $0.name == "token" })?.value
        else {
            throw HTTPProbe.ProbeError("engine.status has no dashboard URL: \(status.jsonText())")
        }
        self.url = url
        self.port = port
        self.token = token
    }

    var bearer: (String, String) { ("Authorization", "Bearer \(token)") }
}
