import ArgumentParser
import Foundation
import MacroBase
import MacroRPC

#if canImport(Glibc)
import Glibc
#endif

/// `macro dashboard`: prints a URL of the daemon's dashboard that carries a one-time code (not
/// the token) and, on a terminal, opens it in a browser ($BROWSER, else xdg-open).
struct Dashboard: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dashboard",
        abstract: "Print a one-time URL of the dashboard and open it in a browser.",
        discussion: """
            Asks macrod (engine.status, which only the socket's owner can) for its dashboard, \
            gets a one-time code from it with the access token (POST /code), and prints \
            http://HOST:PORT/?code=CODE: the page trades the code for the token once, within \
            60 s; after that, or once used, the URL is worthless (a browser's command line is \
            visible to every local user). On a terminal the URL is also opened with $BROWSER \
            (the first command of a colon-separated list; %s is replaced by the URL), else \
            xdg-open; --no-open only prints it. When no browser opens (the command is missing, \
            or it exits with an error within 3 s, as xdg-open does with 3 when it finds no \
            browser), it says so with the URL on stderr and exits 71: the code works only \
            within its 60 s. The dashboard is on when macrod runs with --http 127.0.0.1:PORT or \
            the config's `http` key (exit 69 when it is off).

            \(Exit.table(of: [0, 64, 69, 70, 71, 77, 78]))
            """)
    @Flag(name: .customLong("no-open"), help: "Only print the URL, even on a terminal.")
    var noOpen = false
    @OptionGroup var daemon: DaemonOptions
    var options: EngineOptions { EngineOptions(daemon) }

    func run() throws {
        let client = try DaemonLink.require(options, for: "dashboard")
        let status: MacroValue
        do { status = try client.call(.status) } catch let error as RPCError { throw DaemonLink.report(error) }
        guard let address = status["dashboard"].stringValue else {
            throw Failure(
                exit: 69, kind: "unavailable", message: "macro dashboard: macrod serves no dashboard; start it with --http 127.0.0.1:0, or set http: \"127.0.0.1:0\" in its config")
        }
        let (url, lifetime) = try Self.oneTimeURL(address)
        if options.json {
            print(MacroValue.object(["url": .string(url), "expiresInMs": .number(Double(lifetime))]).jsonText())
        } else {
            print(url)
        }
        guard Terminal.isInteractive, !noOpen, !options.json else { return }
        if let problem = Self.open(url) { throw Self.noBrowser(problem, url: url, lifetimeMs: lifetime) }
    }

    /// Exit 71 when no browser opened: why (on its own line), then the URL to open by hand
    /// before its one-time code expires.
    static func noBrowser(_ problem: String, url: String, lifetimeMs: Int) -> Failure {
        Console.error("macro dashboard: \(problem)")
        return Failure(
            exit: Exit.browserFailed.rawValue, kind: "browser",
            message: "macro dashboard: could not open a browser; open this URL within \(max(1, lifetimeMs / 1000)) s: \(url)")
    }

    /// `http://HOST:PORT/?code=CODE` for engine.status's `http://HOST:PORT/?token=TOKEN`: asks
    /// the dashboard for a one-time code with the token (`POST /code`). Returns the URL and how
    /// long its code lasts, in milliseconds.
    static func oneTimeURL(_ address: String) throws -> (url: String, lifetimeMs: Int) {
        guard let components = URLComponents(string: address), let host = components.host, let port = components.port,
            let token = components.queryItems?.first(where: { $0.name == "token" })?.value
        else {
            throw Failure(exit: 69, kind: "unavailable", message: "macro dashboard: macrod reported a dashboard URL without a token: \(address)")
        }
        let base = String(address.prefix { $0 != "?" })
        let reply: DashboardHTTP.Reply
        do {
            reply = try DashboardHTTP.post(host: host, port: port, path: "/code", token: token)
        } catch {
            throw Failure(exit: 69, kind: "unavailable", message: "macro dashboard: cannot ask the dashboard at \(base) for a one-time code: \(error)")
        }
        guard reply.status == 200, let value = try? JSONParser.parse(reply.body), let code = value["code"].stringValue,
            code.allSatisfy(\.isHexDigit)
        else {
            throw Failure(
                exit: 69, kind: "unavailable",
                message:
                    "macro dashboard: the dashboard at \(base) gave no one-time code: \(reply.status) \(String(decoding: reply.body, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))"
            )
        }
        return (base + "?code=" + code, value["expiresInMs"].intValue ?? 60_000)
    }

    /// Starts the browser and gives it `patience` to fail: returns why it could not start, or
    /// exited with an error within that time (xdg-open exits 3 when it finds no browser), or nil.
    /// A command still running after `patience` (a browser that stays in the foreground) is taken
    /// as opened, and left running.
    static func open(
        _ url: String, environment: [String: String] = ProcessInfo.processInfo.environment, patience: Duration = .seconds(3)
    ) -> String? {
        var command: [String]
        if let browser = environment["BROWSER"]?.split(separator: ":").first.map(String.init), !browser.isEmpty {
            command = browser.split(separator: " ").map(String.init)
            if command.contains(where: { $0.contains("%s") }) {
                command = command.map { $0.replacingOccurrences(of: "%s", with: url) }
            } else {
                command.append(url)
            }
        } else {
            command = ["xdg-open", url]
        }
        let path = (environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":").map { "\($0)/\(command[0])" }
        guard let executable = command[0].contains("/") ? command[0] : path.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            return "no browser to open it with: \(command[0]) is not installed (set $BROWSER, or install xdg-utils)"
        }
        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = Array(command.dropFirst())
        process.standardOutput = nil
        process.standardError = nil
        process.standardInput = nil
        do {
            try process.run()
        } catch {
            return "cannot run \(command[0]): \(error)"
        }
        // A browser that stays (no launcher in between) is not waited for: it is left running.
        guard let ended = process.wait(timeout: patience) else { return nil }
        switch ended {
        case .exit(0): return nil
        case .exit(3) where command[0] == "xdg-open":
            return "xdg-open exited with 3: it found no browser (set $BROWSER, or install one)"
        case .exit(let status): return "\(command[0]) exited with \(status)"
        case .signal(let signal): return "\(command[0]) was killed by signal \(signal)"
        }
    }
}

/// A minimal HTTP/1.1 client for the dashboard on loopback (the thin `macro` has no HTTP library):
/// one request, `Connection: close`, the whole response read until the server closes.
enum DashboardHTTP {
    /// A response: its status and body.
    struct Reply {
        var status: Int
        var body: [UInt8]
    }

    /// Why a request failed.
    struct RequestError: Error, CustomStringConvertible {
        var description: String
    }

    /// `POST path` with `Authorization: Bearer token` and no body.
    static func post(host: String, port: Int, path: String, token: String) throws(RequestError) -> Reply {
        let name = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(name, String(port), &hints, &list) == 0, let first = list else {
            throw RequestError(description: "cannot resolve \(name)")
        }
        defer { freeaddrinfo(list) }
        var fd: Int32 = -1
        var reason = "no address"
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let current = entry, fd < 0 {
            let candidate = socket(current.pointee.ai_family, current.pointee.ai_socktype | Int32(SOCK_CLOEXEC.rawValue), current.pointee.ai_protocol)
            if candidate >= 0 {
                var timeout = timeval(tv_sec: 10, tv_usec: 0)
                setsockopt(candidate, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
                setsockopt(candidate, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
                if connect(candidate, current.pointee.ai_addr, current.pointee.ai_addrlen) == 0 {
                    fd = candidate
                } else {
                    reason = String(cString: strerror(errno))
                    close(candidate)
                }
            }
            entry = current.pointee.ai_next
        }
        guard fd >= 0 else { throw RequestError(description: reason) }
        defer { close(fd) }
        let hostHeader = name.contains(":") ? "[\(name)]:\(port)" : "\(name):\(port)"
        let request = Array("POST \(path) HTTP/1.1\r\nHost: \(hostHeader)\r\nAuthorization: Bearer \(token)\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8)
        var offset = 0
        while offset < request.count {
            let sent = request[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { throw RequestError(description: "send failed: \(String(cString: strerror(errno)))") }
            offset += sent
        }
        var response: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while response.count < 1 << 20 {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count == 0 { break }
            guard count > 0 else { throw RequestError(description: "no answer: \(String(cString: strerror(errno)))") }
            response += buffer[..<count]
        }
        let separator = Array("\r\n\r\n".utf8)
        guard let end = (0..<max(0, response.count - 3)).first(where: { Array(response[$0..<$0 + 4]) == separator }) else {
            throw RequestError(description: "not an HTTP response")
        }
        let statusLine = String(decoding: response[..<end], as: UTF8.self).split(separator: "\r\n").first ?? ""
        let parts = statusLine.split(separator: " ")
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/"), let status = Int(parts[1]) else {
            throw RequestError(description: "not an HTTP response: \(statusLine)")
        }
        return Reply(status: status, body: Array(response[(end + 4)...]))
    }
}
