/// Where macrod's dashboard listens (`http` in the config, `macrod --http`): `HOST:PORT`, with an
/// IPv6 host in brackets (`[::1]:8080`). Port 0 picks a free port.
public struct HTTPAddress: Sendable, Equatable, CustomStringConvertible {
    /// The host name or address literal, without brackets.
    public var host: String
    /// The TCP port, 0...65535 (0: any free port).
    public var port: Int

    /// Creates an address.
    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// Parses `HOST:PORT`; nil when the text is not of that form.
    public init?(parsing text: String) {
        let hostPart: Substring, portPart: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else { return nil }
            hostPart = text[text.index(after: text.startIndex)..<close]
            portPart = text[text.index(close, offsetBy: 2)...]
        } else {
            guard let colon = text.lastIndex(of: ":"), !text[..<colon].contains(":") else { return nil }
            hostPart = text[..<colon]
            portPart = text[text.index(after: colon)...]
        }
        guard !hostPart.isEmpty, !hostPart.contains(where: { $0 == " " || $0 == "/" }),
            !portPart.isEmpty, portPart.allSatisfy(\.isASCIIDigit), portPart.count <= 5,
            let port = Int(portPart), (0...65_535).contains(port)
        else { return nil }
        self.init(host: String(hostPart), port: port)
    }

    /// True for `localhost`, an IPv4 address in 127.0.0.0/8, and `::1`.
    public var isLoopback: Bool { Self.isLoopback(host: host) }

    /// True when `host` (no brackets, no port) names the loopback interface: `localhost`,
    /// `*.localhost`, an IPv4 address in 127.0.0.0/8, or `::1`.
    public static func isLoopback(host: String) -> Bool {
        let lower = host.lowercased()
        if lower == "localhost" || lower.hasSuffix(".localhost") || lower == "::1" || lower == "0:0:0:0:0:0:0:1" { return true }
        let parts = lower.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0] == "127" else { return false }
        return parts.allSatisfy { part in !part.isEmpty && part.count <= 3 && part.allSatisfy(\.isASCIIDigit) && Int(part)! <= 255 }
    }

    /// `HOST:PORT`, the host in brackets when it is an IPv6 literal.
    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}
