import Foundation
import Logging

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
        let snapshot = try loadSnapshot()
        guard let data = FileManager.default.contents(atPath: journalPath), let newer = StateJournal.lastValues(in: data) else {
            return snapshot
        }
        if case .loaded(var values) = snapshot {
            values.merge(newer) { _, new in new }
            return .loaded(values)
        }
        return .loaded(newer)
    }

    private func loadSnapshot() throws -> LoadResult {
        guard FileManager.default.fileExists(atPath: path) else { return .missing }
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw MacroError(code: .io, message: "cannot read state file \(path): \(MacroConfig.reason(error))", file: path)
        }
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

    /// Loads the file into `model` (restoring without notifying observers). Returns what was
    /// found, so the caller can warn about a corrupt file that was moved aside.
    @discardableResult
    public func restore(into model: ProgressModel) throws -> LoadResult {
        let result = try load()
        if case .loaded(let values) = result { model.restore(values) }
        return result
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
        let formatter = DateFormatter()
        formatter.dateFormat = "yyyyMMdd-HHmmss"
        formatter.timeZone = TimeZone(identifier: "UTC")
        var target = "\(path).corrupt-\(formatter.string(from: Date()))"
        var attempt = 1
        while FileManager.default.fileExists(atPath: target) {
            attempt += 1
            target = "\(path).corrupt-\(formatter.string(from: Date()))-\(attempt)"
        }
        guard rename(path, target) == 0 else {
            throw MacroError(code: .io, message: "state file \(path) is corrupt (\(reason)) and could not be moved aside: \(String(cString: strerror(errno)))", file: path)
        }
        return .corrupt(reason: reason, movedTo: target)
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
