import Foundation
import Logging
import MacroBase
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The audit log: every change to the macros, the config and the values made from outside a
/// macro, one JSON object per line (``AuditEvent/json``) in a file beside the state file
/// (`STATE.audit.jsonl`), appended as each change is accepted (not fsynced: a power loss may lose
/// the last lines, a crash of macrod does not). Bounded: when the file holds `limit` events it
/// becomes `STATE.audit.jsonl.1` (replacing the one before) and a new file starts, so between
/// `limit` and twice that are on disk, and the newest `limit` are read back at start. A line that
/// cannot be understood is skipped with a warning; a symlink is never followed (the log then stays
/// in memory, with a warning). Thread-safe.
package final class AuditLog: Sendable {
    /// The log file.
    package let path: String
    private let logger: Logger
    private let counted: @Sendable (AuditEvent.Kind) -> Void
    private let state: Mutex<State>

    private struct State {
        /// The newest events, oldest first (at most twice `limit` between trims).
        var recent: [AuditEvent] = []
        var limit: Int
        var nextSeq = 1
        /// The open log file (-1: none, the log is in memory only).
        var descriptor: Int32 = -1
        /// Events in the current file.
        var linesInFile = 0
        /// Why the file is not written, once logged.
        var disabled: String?
    }

    /// Opens (or starts) the log at `path`, keeping `limit` events; `counted` is told each
    /// event's kind as it is recorded (the Prometheus counter).
    package init(path: String, limit: Int, logger: Logger, counted: @escaping @Sendable (AuditEvent.Kind) -> Void = { _ in }) {
        self.path = path
        self.logger = logger
        self.counted = counted
        var initial = State(limit: max(1, limit))
        let previous = Self.readEvents("\(path).1", logger: logger)
        let current = Self.readEvents(path, logger: logger)
        initial.recent = Array((previous.events + current.events).suffix(initial.limit))
        initial.nextSeq = ((previous.events + current.events).map(\.seq).max() ?? 0) + 1
        initial.linesInFile = current.lines
        state = Mutex(initial)
        state.withLock { Self.open(&$0, path: path, logger: logger, endsWithNewline: current.endsWithNewline) }
    }

    deinit {
        state.withLock { if $0.descriptor >= 0 { Glibc.close($0.descriptor) } }
    }

    /// The events kept (`audit_entries`); a new limit applies from the next event.
    package var limit: Int {
        get { state.withLock { $0.limit } }
        set { state.withLock { $0.limit = max(1, newValue) } }
    }

    /// Records a change now and returns it as written.
    @discardableResult
    package func record(
        _ kind: AuditEvent.Kind, by actor: AuditActor, name: String? = nil, before: String? = nil, after: String? = nil, version: Int? = nil,
        details: MacroValue? = nil
    ) -> AuditEvent {
        let time = Date().timeIntervalSince1970
        let event = state.withLock { state -> AuditEvent in
            let event = AuditEvent(
                seq: state.nextSeq, time: time, kind: kind, actor: actor, name: name, before: before, after: after, version: version, details: details)
            state.nextSeq += 1
            state.recent.append(event)
            if state.recent.count >= 2 * state.limit { state.recent.removeFirst(state.recent.count - state.limit) }
            append(event, &state)
            return event
        }
        counted(kind)
        return event
    }

    /// The newest `limit` events (all kept: at most `audit_entries`), oldest first; only those of
    /// `name` and of `kind` when given.
    package func recent(limit: Int? = nil, name: String? = nil, kind: AuditEvent.Kind? = nil) -> [AuditEvent] {
        let events = state.withLock { Array($0.recent.suffix($0.limit)) }
        let matching = events.filter { (name == nil || $0.name == name) && (kind == nil || $0.kind == kind) }
        return limit.map { Array(matching.suffix($0)) } ?? matching
    }

    private func append(_ event: AuditEvent, _ state: inout State) {
        if state.linesInFile >= state.limit, state.descriptor >= 0 {
            Glibc.close(state.descriptor)
            state.descriptor = -1
            if rename(path, "\(path).1") != 0 {
                logger.warning("audit log: cannot rotate \(path) to \(path).1: \(String(cString: strerror(errno)))")
            }
            state.linesInFile = 0
            Self.open(&state, path: path, logger: logger, endsWithNewline: true)
        }
        guard state.descriptor >= 0 else { return }
        let line = Array((event.json.jsonText(pretty: false) + "\n").utf8)
        var offset = 0
        while offset < line.count {
            let n = line.withUnsafeBytes { Glibc.write(state.descriptor, $0.baseAddress! + offset, $0.count - offset) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else {
                logger.warning("audit log: cannot write \(path): \(String(cString: strerror(errno)))")
                return
            }
            offset += n
        }
        state.linesInFile += 1
    }

    private static func open(_ state: inout State, path: String, logger: Logger, endsWithNewline: Bool) {
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty { try? AtomicFile.createDirectory(directory) }
        let fd = Glibc.open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0o600)
        var info = stat()
        guard fd >= 0, fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            let reason = fd >= 0 ? "not a regular file" : String(cString: strerror(errno))
            if fd >= 0 { Glibc.close(fd) }
            if state.disabled == nil { logger.warning("audit log: cannot write \(path) (\(reason); a symlink is not followed); keeping the log in memory only") }
            state.disabled = reason
            return
        }
        // A line cut short by a crash: the next event starts on a line of its own.
        if !endsWithNewline { _ = Glibc.write(fd, "\n", 1) }
        state.descriptor = fd
        state.disabled = nil
    }

    /// The events of the file at `path` (none when it is missing), the number of its lines, and
    /// whether it ends with a newline. Lines that cannot be understood are skipped with one warning.
    private static func readEvents(_ path: String, logger: Logger) -> (events: [AuditEvent], lines: Int, endsWithNewline: Bool) {
        guard PlainFile.kind(path) != .missing else { return ([], 0, true) }
        let bytes: [UInt8]
        do { bytes = try PlainFile.read(path, limit: 256 << 20) } catch {
            logger.warning("audit log: \(error.message); its events are not shown")
            return ([], 0, true)
        }
        var events: [AuditEvent] = []
        var bad: [Int] = []
        var lines = 0
        for (number, line) in bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).enumerated() where !line.isEmpty {
            lines += 1
            if let value = try? JSONParser.parse(line), let event = AuditEvent(json: value) { events.append(event) } else { bad.append(number + 1) }
        }
        if let first = bad.first {
            logger.warning("audit log: \(path): \(bad.count) line(s) could not be understood and were skipped (the first: line \(first))")
        }
        return (events, lines, bytes.last.map { $0 == UInt8(ascii: "\n") } ?? true)
    }
}
