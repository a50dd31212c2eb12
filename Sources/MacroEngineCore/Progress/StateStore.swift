import Foundation
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// Persists the progress values between runs in a small JSON file:
/// `{"version": 1, "progress": {"inner": 1.5, "middle": 0, "outer": 10}}`, plus the daemon's
/// ``StateJournal`` (`STATE.journal`), whose last line, when present, is newer than the file.
/// Writes are atomic (``AtomicFile``). A file that cannot be understood is moved aside — kept,
/// never deleted — and the model starts from its defaults.
public struct StateStore: Sendable {
    /// The state file.
    public let path: String

    /// What ``load()`` found.
    public enum LoadResult: Sendable, Equatable {
        /// No state file yet.
        case missing
        /// The saved values.
        case loaded([String: Double])
        /// The file was not valid state; it was renamed to `movedTo`. `reason` says why.
        case corrupt(reason: String, movedTo: String)
    }

    /// Creates a store for `path`.
    public init(path: String) { self.path = path }

    /// The daemon's journal beside the state file.
    public var journalPath: String { path + ".journal" }

    private struct File: Codable {
        var version: Int
        var progress: [String: Double]
    }

    /// Reads the file. A corrupt one is renamed to `PATH.corrupt-YYYYMMDD-HHMMSS` (a `.io` error
    /// is thrown only when even that fails, so nothing is ever overwritten).
    public func load() throws -> LoadResult {
        var warnings: [StateWarning] = []
        return try load(warnings: &warnings)
    }

    /// Reads the file and the journal; what was wrong with the journal, and what was done about
    /// it, is added to `warnings` (at most one warning per problem, however many lines show it).
    /// A journal with lines that cannot be used (garbage, not an object of finite numbers) is
    /// moved aside to `PATH.journal.corrupt-…` (kept, never deleted; a torn last line is not a
    /// problem) after its last usable line is written into the state file; one that is not a
    /// regular file (a directory, a FIFO) is moved aside unread; a symbolic link is not followed.
    public func load(warnings: inout [StateWarning]) throws -> LoadResult {
        let snapshot = try loadSnapshot()
        let before = warnings.count
        guard let newer = try loadJournal(warnings: &warnings) else { return snapshot }
        var merged = newer
        if case .loaded(let values) = snapshot { merged = values.merging(newer) { _, new in new } }
        if warnings[before...].contains(where: { $0.code == .journalMovedAside }) {
            // The kept copy is for people: the values it held live on in the state file.
            do {
                try writeSnapshot(merged, durable: true)
            } catch let error as MacroError {
                warnings.append(
                    StateWarning(code: .journalMovedAside, message: "\(error.message); the values of the journal kept aside are used for now, but not saved", file: path))
            }
        }
        return .loaded(merged)
    }

    /// The values of the journal's last usable line (nil: no journal, or nothing usable).
    private func loadJournal(warnings: inout [StateWarning]) throws -> [String: Double]? {
        let journal = journalPath
        var info = stat()
        guard lstat(journal, &info) == 0 else {
            if errno == ENOENT || errno == ENOTDIR { return nil }
            warnings.append(
                StateWarning(code: .journalUnreadable, message: "cannot read the state journal \(journal): \(String(cString: strerror(errno))); ignored", file: journal))
            return nil
        }
        switch info.st_mode & S_IFMT {
        case S_IFREG:
            break
        case S_IFLNK:
            warnings.append(
                StateWarning(
                    code: .journalUnreadable,
                    message: "the state journal \(journal) is a symbolic link; not following it: ignored, and nothing is written through it (remove it)",
                    file: journal))
            return nil
        default:
            let kind = Self.kind(of: info.st_mode)
            warnings.append(moveJournalAside(because: "the state journal \(journal) is \(kind), not a file", values: "the state file's values are used"))
            return nil
        }
        let data: Data
        do {
            data = try Self.readRegularFile(journal, what: "the state journal", following: false)
        } catch let error as MacroError {
            warnings.append(StateWarning(code: .journalUnreadable, message: "\(error.message); ignored", file: journal))
            return nil
        }
        let scan = StateJournal.scan(data)
        if let first = scan.firstProblem {
            let lines =
                scan.problems == 1
                ? "line \(first.line) cannot be used (\(first.reason))"
                : "\(scan.problems) lines cannot be used (the first, line \(first.line): \(first.reason))"
            let used = scan.valuesLine.map { "the values of its line \($0) are used" } ?? "no line is usable: the state file's values are used"
            warnings.append(moveJournalAside(because: "state journal \(journal): \(lines)", values: used))
        }
        return scan.values
    }

    /// Renames the journal to `PATH.journal.corrupt-…`; the warning says why and what was done.
    private func moveJournalAside(because reason: String, values: String) -> StateWarning {
        let journal = journalPath
        let target = Self.asideName(for: journal)
        guard rename(journal, target) == 0 else {
            return StateWarning(
                code: .journalUnreadable,
                message: "\(reason); \(values); it could not be moved aside (\(String(cString: strerror(errno)))) and is left as it is",
                file: journal)
        }
        return StateWarning(code: .journalMovedAside, message: "\(reason); kept as \(target) (never deleted); \(values)", file: journal)
    }

    private func loadSnapshot() throws -> LoadResult {
        var info = stat()
        guard stat(path, &info) == 0 else {
            // A missing file, or a path through a file (the write names that), is no state yet.
            if errno == ENOENT || errno == ENOTDIR { return .missing }
            throw AtomicFile.failure("cannot read state file", path)
        }
        let data = try Self.readRegularFile(path, what: "state file", following: true)
        do {
            let file = try JSONDecoder().decode(File.self, from: data)
            guard file.version == 1 else { return try moveAside(reason: "unknown state file version \(file.version)") }
            guard file.progress.values.allSatisfy(\.isFinite) else { return try moveAside(reason: "a progress value is not a finite number") }
            return .loaded(file.progress)
        } catch {
            let reason = data.isEmpty ? "the file is empty" : "not valid state JSON (\(Self.describe(error)))"
            return try moveAside(reason: reason)
        }
    }

    /// The bytes of the regular file at `path`; anything else (a directory, a FIFO, a device;
    /// with `following: false` a symbolic link) is a `.io` error saying what it is. A FIFO is
    /// never waited on.
    static func readRegularFile(_ path: String, what: String, following: Bool) throws -> Data {
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | (following ? 0 : O_NOFOLLOW))
        guard fd >= 0 else {
            if errno == ELOOP, !following {
                throw MacroError(code: .io, message: "\(what) \(path) is a symbolic link; not following it", file: path)
            }
            throw AtomicFile.failure("cannot read \(what)", path)
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw AtomicFile.failure("cannot read \(what)", path) }
        guard info.st_mode & S_IFMT == S_IFREG else {
            let hint = info.st_mode & S_IFMT == S_IFDIR && what == "state file" ? "; state_file (--state) names a file, e.g. \(path)/state.json" : ""
            throw MacroError(code: .io, message: "cannot read \(what) \(path): it is \(kind(of: info.st_mode)), not a regular file\(hint)", file: path)
        }
        var data = Data(count: max(0, Int(info.st_size)))
        var filled = 0
        while true {
            if filled == data.count { data.count += max(4096, data.count / 2) }
            let n = data.withUnsafeMutableBytes { read(fd, $0.baseAddress! + filled, $0.count - filled) }
            if n < 0 {
                if errno == EINTR { continue }
                throw AtomicFile.failure("cannot read \(what)", path)
            }
            if n == 0 { break }
            filled += n
        }
        data.count = filled
        return data
    }

    /// "a directory", "a FIFO", ... for a file type in `st_mode`.
    static func kind(of mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFDIR: return "a directory"
        case S_IFIFO: return "a FIFO"
        case S_IFSOCK: return "a socket"
        case S_IFCHR: return "a character device"
        case S_IFBLK: return "a block device"
        case S_IFLNK: return "a symbolic link"
        case S_IFREG: return "a regular file"
        default: return "not a regular file"
        }
    }

    /// Loads the file into `model` (restoring without notifying observers). Returns what was
    /// found, so the caller can warn about a corrupt file that was moved aside.
    @discardableResult
    public func restore(into model: ProgressModel) throws -> LoadResult {
        var warnings: [StateWarning] = []
        return try restore(into: model, warnings: &warnings)
    }

    /// Loads the file into `model` like ``restore(into:)``, adding to `warnings` what
    /// ``load(warnings:)`` found, each saved value outside its channel's range (it is clamped)
    /// and each saved name that is no channel (its value is dropped).
    @discardableResult
    public func restore(into model: ProgressModel, warnings: inout [StateWarning]) throws -> LoadResult {
        let result = try load(warnings: &warnings)
        guard case .loaded(let values) = result else { return result }
        let names = Set(model.channels.map(\.name))
        for channel in model.channels {
            guard let value = values[channel.name], value.isFinite, channel.clamp(value) != value else { continue }
            warnings.append(
                StateWarning(
                    code: .outOfRange,
                    message:
                        "state file \(path): the saved value \(Self.format(value)) of '\(channel.name)' is outside its range \(Self.format(channel.minimum))...\(Self.format(channel.maximum)); clamped to \(Self.format(channel.clamp(value)))",
                    file: path))
        }
        for name in values.keys.sorted() where !names.contains(name) {
            warnings.append(
                StateWarning(
                    code: .unknownChannel,
                    message:
                        "state file \(path): no progress channel is named '\(name)' (channels: \(model.channels.map(\.name).joined(separator: ", "))); its saved value \(Self.format(values[name]!)) is dropped",
                    file: path))
        }
        model.restore(values)
        return result
    }

    /// A value as people write it: `42`, `-0.5`, `1e+300`.
    static func format(_ value: Double) -> String {
        if value.rounded() == value, abs(value) < 1e15 { return String(Int64(value)) }
        return "\(value)"
    }

    /// Writes the values atomically (`durable`: with fsync, so a power loss keeps them too) and
    /// removes the journal, which the file now supersedes.
    public func save(_ values: [String: Double], durable: Bool = true) throws {
        try writeSnapshot(values, durable: durable)
        if unlink(journalPath) != 0 && errno != ENOENT {
            throw AtomicFile.failure("cannot remove", journalPath)
        }
    }

    /// Writes the state file only (the journal is the caller's business).
    func writeSnapshot(_ values: [String: Double], durable: Bool) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        let data = try encoder.encode(File(version: 1, progress: values))
        try AtomicFile.write(data + Data("\n".utf8), to: path, mode: 0o600, durable: durable)
    }

    private func moveAside(reason: String) throws -> LoadResult {
        let target = Self.asideName(for: path)
        guard rename(path, target) == 0 else {
            throw MacroError(code: .io, message: "state file \(path) is corrupt (\(reason)) and could not be moved aside: \(String(cString: strerror(errno)))", file: path)
        }
        return .corrupt(reason: reason, movedTo: target)
    }

    /// `PATH.corrupt-YYYYMMDD-HHMMSS` (UTC), with `-2`, `-3`… when that exists.
    static func asideName(for path: String) -> String {
        let formatter = DateFormatter()
        formatter.dateFormat = "yyyyMMdd-HHmmss"
        formatter.timeZone = TimeZone(identifier: "UTC")
        var target = "\(path).corrupt-\(formatter.string(from: Date()))"
        var attempt = 1
        var info = stat()
        while lstat(target, &info) == 0 {
            attempt += 1
            target = "\(path).corrupt-\(formatter.string(from: Date()))-\(attempt)"
        }
        return target
    }

    private static func describe(_ error: any Error) -> String {
        switch error {
        case DecodingError.typeMismatch(_, let context), DecodingError.dataCorrupted(let context):
            let key = context.codingPath.map(\.stringValue).joined(separator: ".")
            return key.isEmpty ? context.debugDescription : "at '\(key)': \(context.debugDescription)"
        case DecodingError.keyNotFound(let key, _): return "missing '\(key.stringValue)'"
        default: return "\(error)"
        }
    }
}

/// Something ``StateStore/load(warnings:)`` or ``StateStore/restore(into:warnings:)`` found and
/// worked around (the values are still loaded): what it was, where, and what was done, for the
/// log. Never an error: the caller decides how to show it.
public struct StateWarning: Sendable, Hashable, CustomStringConvertible {
    /// What kind of problem it was.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }

        /// The journal had unusable lines, or was not a regular file: it was moved aside.
        public static let journalMovedAside = Code("journalMovedAside")
        /// The journal could not be read (or is a symbolic link, not followed): it was ignored.
        public static let journalUnreadable = Code("journalUnreadable")
        /// A saved value was outside its channel's range: it was clamped.
        public static let outOfRange = Code("outOfRange")
        /// A saved name is no channel of the model: its value was dropped.
        public static let unknownChannel = Code("unknownChannel")

        /// The code's name, e.g. `outOfRange`.
        public var description: String { name }
    }

    /// What kind of problem it was.
    public var code: Code
    /// For the log: what was wrong, where, and what was done.
    public var message: String
    /// The file it is about (the state file or its journal).
    public var file: String

    /// Creates a warning.
    public init(code: Code, message: String, file: String) {
        self.code = code
        self.message = message
        self.file = file
    }

    /// The message.
    public var description: String { message }
}
