import Foundation
import MacroEngineCore
import NIOHTTP1

/// The dashboard's checks on every request, before anything is served:
/// 1. `Host` must name the loopback interface (a DNS-rebinding page sends its own name): else 421;
/// 2. an `Origin`, when sent, must be this server's own (`http://` + the Host): else 403; this is
///    what refuses a WebSocket upgrade from another site;
/// 3. the token: `Authorization: Bearer`, the session cookie, or `?token=` (then a cookie is set):
///    else 401.
struct RequestGuard: Sendable {
    /// What to do with a request.
    enum Decision: Equatable, Sendable {
        /// Serve it; `fromQuery`: the token came as `?token=` (set the cookie).
        case allow(fromQuery: Bool)
        /// Answer `status` with `message` and nothing else.
        case refuse(HTTPResponseStatus, String)
    }

    let token: DashboardToken
    /// Accept any Host (`http_allow_remote: true`).
    let allowRemote: Bool

    func check(_ head: HTTPRequestHead) -> Decision {
        let hosts = head.headers["Host"]
        guard hosts.count == 1, let host = hosts.first, let name = Self.hostName(host) else {
            return .refuse(.misdirectedRequest, "421 Misdirected Request: one Host header is required")
        }
        guard allowRemote || HTTPAddress.isLoopback(host: name) else {
            return .refuse(.misdirectedRequest, "421 Misdirected Request: the dashboard answers to loopback names only (Host: \(host))")
        }
        for origin in head.headers["Origin"] where origin.lowercased() != "http://\(host.lowercased())" {
            return .refuse(.forbidden, "403 Forbidden: cross-origin request refused (Origin: \(origin))")
        }
        if let authorization = head.headers.first(name: "Authorization") {
            let parts = authorization.split(separator: " ", maxSplits: 1)
            if parts.count == 2, parts[0].lowercased() == "bearer", token.matches(parts[1].trimmingCharacters(in: .whitespaces)) {
                return .allow(fromQuery: false)
            }
            return .refuse(.unauthorized, "401 Unauthorized: wrong bearer token")
        }
        if let value = Self.queryItem("token", in: head.uri) {
            return token.matches(value) ? .allow(fromQuery: true) : .refuse(.unauthorized, "401 Unauthorized: wrong token")
        }
        if let value = cookie(in: head.headers, name: Self.cookieName(host: host)), token.matches(value) {
            return .allow(fromQuery: false)
        }
        return .refuse(.unauthorized, "401 Unauthorized: open the URL that `macro dashboard` prints (it carries the token), or send Authorization: Bearer TOKEN")
    }

    /// The `Set-Cookie` value that keeps the token for the session of the page at `host`.
    func setCookie(host: String) -> String { "\(Self.cookieName(host: host))=\(token.value); Path=/; HttpOnly; SameSite=Strict" }

    /// `macrod_token_PORT`: browsers keep cookies per host, not per port, so two daemons on one
    /// machine each need their own name.
    static func cookieName(host: String) -> String {
        let port: Substring
        if host.hasPrefix("["), let close = host.firstIndex(of: "]") {
            port = host[host.index(after: close)...].drop { $0 == ":" }
        } else {
            port = host.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).dropFirst().first ?? ""
        }
        return "macrod_token_" + (port.isEmpty ? "80" : String(port))
    }

    private func cookie(in headers: HTTPHeaders, name cookieName: String) -> String? {
        for line in headers["Cookie"] {
            for pair in line.split(separator: ";") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                if parts.count == 2, parts[0].trimmingCharacters(in: .whitespaces) == cookieName {
                    return parts[1].trimmingCharacters(in: .whitespaces)
                }
            }
        }
        return nil
    }

    /// The host part of a Host header (`[::1]:8080` -> `::1`, `localhost:80` -> `localhost`).
    static func hostName(_ host: String) -> String? {
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else { return nil }
            return String(host[host.index(after: host.startIndex)..<close])
        }
        let name = host.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
        return name.isEmpty ? nil : name
    }

    /// The value of `name` in the URI's query (percent-decoded), if present.
    static func queryItem(_ name: String, in uri: String) -> String? {
        guard let question = uri.firstIndex(of: "?") else { return nil }
        for pair in uri[uri.index(after: question)...].split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            if parts.first == Substring(name) { return parts.count == 2 ? (String(parts[1]).removingPercentEncoding ?? String(parts[1])) : "" }
        }
        return nil
    }

    /// The URI's path without its query.
    static func path(of uri: String) -> String {
        String(uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? "")
    }

    /// The URI without its `token` query item (where a page load with `?token=` is redirected).
    /// Only a path of this server: `//evil.example/`, `/\evil.example` and absolute-form targets
    /// (`http://evil.example/`) would send the browser elsewhere, and become `/`.
    static func withoutToken(_ uri: String) -> String {
        let question = uri.firstIndex(of: "?")
        var path = String(uri[..<(question ?? uri.endIndex)])
        if !path.hasPrefix("/") || path.hasPrefix("//") || path.hasPrefix("/\\") || path.contains("\\") { path = "/" }
        guard let question else { return path }
        let kept = uri[uri.index(after: question)...].split(separator: "&").filter { !$0.hasPrefix("token=") && $0 != "token" }
        return path + (kept.isEmpty ? "" : "?" + kept.joined(separator: "&"))
    }
}
