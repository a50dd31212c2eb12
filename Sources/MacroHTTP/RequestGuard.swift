import Foundation
import MacroEngineCore
import NIOHTTP1

/// The dashboard's checks on every request, before anything is served:
/// 1. `Host` must name the loopback interface (a DNS-rebinding page sends its own name): else 421;
/// 2. an `Origin`, when sent, must be this server's own (`http://` + the Host): else 403; this is
///    what refuses a WebSocket upgrade from another site;
/// 3. the token, sent explicitly: `Authorization: Bearer TOKEN`, or on a WebSocket upgrade the
///    subprotocol `macrod.token.TOKEN` (a browser's WebSocket cannot send headers): else 401.
///    Never a cookie (cookies are not port-scoped: a browser sends them to every server on
///    127.0.0.1, whatever its port) and never the query. The page's own files and `POST /session`
///    (which trades a one-time code for the token) need no token: they hold no secret.
struct RequestGuard: Sendable {
    /// What to do with a request.
    enum Decision: Equatable, Sendable {
        /// Serve it; `authenticated`: it carried the token (else it asked for a public path).
        case allow(authenticated: Bool)
        /// Answer `status` with `message` and nothing else.
        case refuse(HTTPResponseStatus, String)
    }

    /// The WebSocket subprotocol the page asks for; the server names it in its 101.
    static let subprotocol = "macrod"
    /// The prefix of the subprotocol entry that carries the token.
    static let tokenSubprotocolPrefix = "macrod.token."

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
                return .allow(authenticated: true)
            }
            return .refuse(.unauthorized, "401 Unauthorized: wrong bearer token")
        }
        let offered = Self.subprotocols(head.headers).filter { $0.hasPrefix(Self.tokenSubprotocolPrefix) }
        if let value = offered.first {
            return token.matches(value.dropFirst(Self.tokenSubprotocolPrefix.count))
                ? .allow(authenticated: true) : .refuse(.unauthorized, "401 Unauthorized: wrong token")
        }
        if Self.isPublic(method: head.method, path: Self.path(of: head.uri)) { return .allow(authenticated: false) }
        return .refuse(.unauthorized, "401 Unauthorized: open the URL that `macro dashboard` prints, or send Authorization: Bearer TOKEN")
    }

    /// What anyone who passes the Host and Origin checks may ask for: the page's own files and
    /// CodeMirror's (static, no secret), and `POST /session` (a one-time code for the token).
    static func isPublic(method: HTTPMethod, path: String) -> Bool {
        switch method {
        case .GET, .HEAD: return StaticFiles.page[path] != nil || path.hasPrefix("/codemirror/")
        case .POST: return path == "/session"
        default: return false
        }
    }

    /// The entries of the request's `Sec-WebSocket-Protocol` headers.
    static func subprotocols(_ headers: HTTPHeaders) -> [String] {
        headers["Sec-WebSocket-Protocol"].flatMap { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } }
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

    /// The URI's path without its query.
    static func path(of uri: String) -> String {
        String(uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? "")
    }
}
