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
/// the last lines, a crash of macrod does not). An event is bounded (``AuditEvent/bounded``): it
/// names a value by its size and hash, never holds it. Bounded: when the file holds `limit` events
/// it becomes `STATE.audit.jsonl.1` (replacing the one before) and a new file starts, so between
/// `limit` and twice that are on disk, and the newest `limit` are read back at start.
///
/// Damage does not reuse numbers: a line that cannot be understood (a torn one) is skipped and
/// counted in one warning; a file past ``readLimit``, or one that cannot be read, is moved aside
/// (`STATE.audit.jsonl.corrupt-DATE`, kept, never deleted), its tail read for the newest events,
/// and a fresh file starts, numbering after the last event read. A write that fails (a full disk)
/// leaves no half line: the next append first cuts the file back to its last whole line (or, if
/// that fails, starts on a new line); the failure is logged once per streak of failures, and once
/// when writing works again. A file deleted or replaced while macrod runs is noticed before the
/// next append (its inode is compared) and written afresh at its path, with a warning. A symlink
/// is never followed (the log then stays in memory, with a warning). Thread-safe.
package final class AuditLog: Sendable {
    /// The log file.
    package let path: String
    /// The largest file read whole at start (256 MiB); a larger one has only its last
    /// ``tailBytes`` read.
    static let readLimit = 256 << 20
    /// How much of the end of a file past ``readLimit`` (or of a damaged one) is read.
    static let tailBytes = 8 << 20
    private let logger: Logger
    private let counted: @Sendable (AuditEvent.Kind) -> Void
    private let writer: @Sendable (Int32, UnsafeRawBufferPointer) -> Int
    private let state: Mutex<State>

    private struct State {
        /// The newest events, oldest first (at most twice `limit` between trims).
        var recent: [AuditEvent] = []
        var limit: Int
        var nextSeq = 1
        /// The open log file (-1: none, the log is in memory only).
        var descriptor: Int32 = -1
        /// The open file's device and inode: when the path no longer names them, it is opened again.
        var identity: (device: UInt64, inode: UInt64)?
        /// The end of the file's last whole line.
        var goodOffset: off_t = 0
        /// The last write failed, maybe part way: cut back to `goodOffset` before the next.
        var torn = false
        /// The error of the current streak of failed writes, and the events it lost.
        var failure: String?
        var unwritten = 0
        /// Events in the current file.
        var linesInFile = 0
        /// Why the file is not written, once logged.
        var disabled: String?
    }

    /// Opens (or starts) the log at `path`, keeping `limit` events; `counted` is told each
    /// event's kind as it is recorded (the Prometheus counter).
    package convenience init(path: String, limit: Int, logger: Logger, counted: @escaping @Sendable (AuditEvent.Kind) -> Void = { _ in }) {
        self.init(path: path, limit: limit, logger: logger, counted: counted, readLimit: Self.readLimit) { fd, bytes in
            Glibc.write(fd, bytes.baseAddress, bytes.count)
        }
    }

    /// As above, a file past `readLimit` bytes read by its tail, each line written by `writer`
    /// (`write(2)`'s contract; tests fail it).
    init(
        path: String, limit: Int, logger: Logger, counted: @escaping @Sendable (AuditEvent.Kind) -> Void = { _ in }, readLimit: Int,
        writer: @escaping @Sendable (Int32, UnsafeRawBufferPointer) -> Int = { fd, bytes in Glibc.write(fd, bytes.baseAddress, bytes.count) }
    ) {
        self.path = path
        self.logger = logger
        self.counted = counted
        self.writer = writer
        var initial = State(limit: max(1, limit))
        let previous = Self.readEvents("\(path).1", limit: readLimit, logger: logger, moveAside: false)
        let current = Self.readEvents(path, limit: readLimit, logger: logger, moveAside: true)
        let events = previous.events + current.events
        initial.recent = Array(events.suffix(initial.limit))
        initial.nextSeq = (events.map(\.seq).max() ?? 0) + 1
        initial.linesInFile = current.lines
        state = Mutex(initial)
        state.withLock { Self.open(&$0, path: path, logger: logger, endsWithNewline: current.endsWithNewline) }
    }

    deinit {
        state.withLock { if $0.descriptor >= 0 { Glibc.close($0.descriptor) } }
    }

    /// The events kept (`audit_entries`); a lower limit applies at once (the file rotates now if
    /// it holds as many).
    package var limit: Int {
        get { state.withLock { $0.limit } }
        set {
            state.withLock { state in
                state.limit = max(1, newValue)
                if state.recent.count > state.limit { state.recent.removeFirst(state.recent.count - state.limit) }
                if state.linesInFile >= state.limit { rotate(&state) }
            }
        }
    }

    /// Records a change now (its details bounded: ``AuditEvent/bounded``) and returns it as written.
    @discardableResult
    package func record(
        _ kind: AuditEvent.Kind, by actor: AuditActor, name: String? = nil, before: String? = nil, after: String? = nil, version: Int? = nil,
        details: MacroValue? = nil
    ) -> AuditEvent {
        let time = Date().timeIntervalSince1970
        let unsequenced = AuditEvent(kind: kind, actor: actor, name: name, before: before, after: after, version: version, details: details).bounded
        let event = state.withLock { state -> AuditEvent in
            var event = unsequenced
            event.seq = state.nextSeq
            event.time = time
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

    /// The current file becomes `.1` and a new one starts.
    private func rotate(_ state: inout State) {
        guard state.descriptor >= 0 else { return }
        Glibc.close(state.descriptor)
        state.descriptor = -1
        if rename(path, "\(path).1") != 0 {
            logger.warning("audit log: cannot rotate \(path) to \(path).1: \(String(cString: strerror(errno)))")
        }
        state.linesInFile = 0
        state.torn = false
        Self.open(&state, path: path, logger: logger, endsWithNewline: true)
    }

    /// Opens the file again when its path no longer names the open file (deleted, moved, replaced).
    private func reopenIfMoved(_ state: inout State) {
        guard state.descriptor >= 0, let identity = state.identity else { return }
        var info = stat()
        if lstat(path, &info) == 0, UInt64(info.st_dev) == identity.device, UInt64(info.st_ino) == identity.inode { return }
        Glibc.close(state.descriptor)
        state.descriptor = -1
        logger.warning("audit log: \(path) was deleted or replaced while macrod ran; the next events go to a new file at that path")
        state.linesInFile = 0
        state.torn = false
        Self.open(&state, path: path, logger: logger, endsWithNewline: true)
    }

    private func append(_ event: AuditEvent, _ state: inout State) {
        if state.linesInFile >= state.limit { rotate(&state) }
        reopenIfMoved(&state)
        guard state.descriptor >= 0 else { return }
        var line = Array((event.json.jsonText(pretty: false) + "\n").utf8)
        // The last write failed part way: cut its half line, or failing that start a new line.
        if state.torn, ftruncate(state.descriptor, state.goodOffset) != 0 { line.insert(UInt8(ascii: "\n"), at: 0) }
        var offset = 0
        while offset < line.count {
            let n = line.withUnsafeBytes { writer(state.descriptor, UnsafeRawBufferPointer(rebasing: $0[offset...])) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else {
                let reason = n < 0 ? String(cString: strerror(errno)) : "nothing written"
                state.torn = true
                state.unwritten += 1
                if state.failure == nil {
                    logger.warning("audit log: cannot write \(path): \(reason); events are kept in memory (audit.recent) until writing works again")
                    state.failure = reason
                }
                return
            }
            offset += n
        }
        if state.failure != nil {
            logger.warning("audit log: writing \(path) again (\(state.unwritten) event(s) could not be written)")
            state.failure = nil
            state.unwritten = 0
        }
        state.torn = false
        let end = lseek(state.descriptor, 0, SEEK_CUR)
        state.goodOffset = end >= 0 ? end : state.goodOffset + off_t(line.count)
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
            state.identity = nil
            return
        }
        state.goodOffset = info.st_size
        // A line cut short by a crash: the next event starts on a line of its own.
        if !endsWithNewline, info.st_size > 0, Glibc.write(fd, "\n", 1) == 1 { state.goodOffset += 1 }
        state.descriptor = fd
        state.identity = (UInt64(info.st_dev), UInt64(info.st_ino))
        state.disabled = nil
    }

    /// The events of the file at `path` (none when it is missing), the number of its lines, and
    /// whether it ends with a newline. Lines that cannot be understood are skipped with one warning;
    /// a line torn by a failed write with a whole event joined on is read for that event. A file
    /// past ``readLimit`` or that cannot be read has its tail read and, with `moveAside`, is moved
    /// aside (a fresh file starts).
    private static func readEvents(_ path: String, limit: Int, logger: Logger, moveAside: Bool) -> (events: [AuditEvent], lines: Int, endsWithNewline: Bool) {
        guard PlainFile.kind(path) != .missing else { return ([], 0, true) }
        var bytes: [UInt8]
        var whole = true
        do { bytes = try PlainFile.read(path, limit: limit) } catch {
            // Too large, or not readable as a whole: its tail, for the newest events and their numbers.
            let tail: (bytes: [UInt8], whole: Bool) = (try? PlainFile.readTail(path, bytes: tailBytes)) ?? ([], true)
            bytes = tail.bytes
            whole = false
            // The first line of a tail is a part of one.
            if !tail.whole { bytes = bytes.firstIndex(of: UInt8(ascii: "\n")).map { Array(bytes[($0 + 1)...]) } ?? [] }
            let kept = moveAside ? PlainFile.moveAside(path) : nil
            let aside = kept.map { "; kept as \($0), a new file starts" } ?? ""
            logger.warning("audit log: \(error.message); only its last \(bytes.count) bytes were read\(aside)")
            if kept == nil, moveAside { return (parse(bytes, path: path, logger: logger).events, Int.max, true) }
        }
        let parsed = parse(bytes, path: path, logger: logger)
        return (parsed.events, whole ? parsed.lines : 0, whole ? (bytes.last.map { $0 == UInt8(ascii: "\n") } ?? true) : true)
    }

    /// The events of `bytes`, one a line, and the number of lines.
    private static func parse(_ bytes: [UInt8], path: String, logger: Logger) -> (events: [AuditEvent], lines: Int) {
        let start = Array("{\"seq\"".utf8)
        var events: [AuditEvent] = []
        var bad: [Int] = []
        var lines = 0
        for (number, line) in bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).enumerated() where !line.isEmpty {
            lines += 1
            // Bounded as a new event is: a line an older macrod wrote may hold a whole value.
            if let value = try? JSONParser.parse(line), let event = AuditEvent(json: value) {
                events.append(event.bounded)
                continue
            }
            bad.append(number + 1)
            // Half an event with a whole one joined on (a write that failed part way): the whole one.
            var index = line.index(before: line.endIndex)
            while index > line.startIndex {
                if line[index...].starts(with: start), let value = try? JSONParser.parse(line[index...]), let event = AuditEvent(json: value) {
                    events.append(event.bounded)
                    break
                }
                index = line.index(before: index)
            }
        }
        if let first = bad.first {
            logger.warning("audit log: \(path): \(bad.count) line(s) could not be understood and were skipped (the first: line \(first))")
        }
        return (events, lines)
    }
}
