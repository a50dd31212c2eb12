import MacroBase
import MacroRPC

/// Who made a change the audit log records: the surface it came through, and what macrod knows
/// of the peer there.
package struct AuditActor: Sendable, Equatable {
    /// Where a change came from.
    package enum Surface: String, Sendable {
        /// A client of the Unix socket (`uid` and `pid` from `SO_PEERCRED`).
        case socket
        /// The dashboard (its WebSocket or `POST /rpc`; `session` is the connection's number).
        case dashboard
        /// A file written on disk (an editor, `cp`, git): the directory watcher saw it; `uid` is
        /// the file's owner.
        case file
        /// macrod itself (a quarantine after a stall).
        case daemon
        /// A signal (SIGHUP: the config reloaded).
        case signal
    }

    /// Where it came from.
    package var surface: Surface
    /// The peer's user (the socket), or the file's owner (a file).
    package var uid: UInt32?
    /// The peer's process (the socket).
    package var pid: Int32?
    /// The dashboard session (its connection's number).
    package var session: Int?

    package init(_ surface: Surface, uid: UInt32? = nil, pid: Int32? = nil, session: Int? = nil) {
        self.surface = surface
        self.uid = uid
        self.pid = pid
        self.session = session
    }

    /// macrod itself.
    package static let daemon = AuditActor(.daemon)

    /// As JSON: `{surface, uid?, pid?, session?}`.
    package var json: MacroValue {
        var fields: OrderedFields = ["surface": .string(surface.rawValue)]
        if let uid { fields["uid"] = .number(Double(uid)) }
        if let pid { fields["pid"] = .number(Double(pid)) }
        if let session { fields["session"] = .number(Double(session)) }
        return .object(fields)
    }

    /// Read back from ``json``; nil when it is not one.
    init?(json: MacroValue) {
        guard let name = json["surface"].stringValue, let surface = Surface(rawValue: name) else { return nil }
        self.init(
            surface, uid: json["uid"].intValue.flatMap { UInt32(exactly: $0) }, pid: json["pid"].intValue.flatMap { Int32(exactly: $0) },
            session: json["session"].intValue)
    }

    /// In words: `socket uid 1000 pid 4242`, `dashboard session 3`, `file uid 1000`.
    package var words: String {
        var parts = [surface.rawValue]
        if let uid { parts.append("uid \(uid)") }
        if let pid { parts.append("pid \(pid)") }
        if let session { parts.append("session \(session)") }
        return parts.joined(separator: " ")
    }
}
