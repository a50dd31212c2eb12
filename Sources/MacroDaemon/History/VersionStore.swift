import Foundation
import Logging
import MacroBase
import MacroRPC
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// How much history is kept (`history_versions`, `history_bytes`).
package struct HistoryLimits: Sendable, Equatable {
    /// Versions kept per file, the newest ones (`history_versions`).
    package var versions: Int
    /// Bytes of all kept objects together (`history_bytes`): past it the oldest versions go
    /// first, whatever their file, but never a file's newest.
    package var bytes: Int

    /// The defaults: 100 versions per file, 32 MiB in all.
    package init(versions: Int = 100, bytes: Int = 32 << 20) {
        self.versions = versions
        self.bytes = bytes
    }
}

/// One kept version of a macro or lib file.
package struct StoredVersion: Sendable, Equatable {
    /// Its number: 1 for the first version kept of the file, then one more for each. A number
    /// stays with its version: retention drops the oldest, it never renumbers.
    package var number: Int
    /// The SHA-256 of its bytes (64 hex digits): its object's name.
    package var hash: String
    /// Its size in bytes.
    package var bytes: Int
    /// When it was kept (seconds since 1970).
    package var time: Double
    /// Who saved it, in words (`socket uid 1000 pid 42`, `dashboard session 3`, `file`, with
    /// `rollback to 2` for a rollback).
    package var who: String
}

/// The versions of every macro and lib file, content-addressed, in a directory of plain files
/// beside the state file (`STATE.history/`): `objects/HASH` holds each distinct content once
/// (the SHA-256 of its bytes), `index/NAME.json` the versions of one file, oldest first
/// (``VersionIndex``), so a save rewrites its own file's index only. Both are written atomically
/// (a temporary file renamed into place); nothing is read or written through a symlink. An index
/// that cannot be understood is moved aside (`NAME.json.corrupt-DATE`, kept) with a warning and
/// that file's history starts again; an object that is missing or does not match its hash is an
/// error for that version only.
package final class VersionStore: Sendable {
    /// The history's directory.
    package let directory: String
    private let logger: Logger
    private let state: Mutex<State>

    private struct State {
        /// The versions of each file (entry name: `bump`, `lib/rings`), oldest first.
        var files: [String: [StoredVersion]] = [:]
        var limits: HistoryLimits
        /// Why nothing can be written (the directory is a symlink, say); nil when it can.
        var disabled: String?
    }

    /// What ``record(_:content:who:time:)`` kept.
    package struct Recorded: Sendable, Equatable {
        /// The new version.
        package var version: StoredVersion
        /// The file's newest version before it (nil: the file's first).
        package var previous: StoredVersion?
    }

    /// Opens (or starts) the history in `directory`; problems are logged, never thrown: a history
    /// that cannot be used leaves saves working.
    package init(directory: String, limits: HistoryLimits, logger: Logger) {
        self.directory = directory
        self.logger = logger
        var initial = State(limits: limits)
        switch PlainFile.kind(directory) {
        case .missing, .directory: initial.files = VersionIndex.load(from: "\(directory)/index", objects: "\(directory)/objects", logger: logger)
        case .regular, .other:
            initial.disabled = "\(directory) is not a directory (a symlink or a file is not followed)"
            logger.warning("version history off: \(initial.disabled!)")
        }
        state = Mutex(initial)
    }

    private var indexDirectory: String { "\(directory)/index" }
    private var objectsDirectory: String { "\(directory)/objects" }
    private func objectPath(_ hash: String) -> String { "\(objectsDirectory)/\(hash)" }

    /// The retention limits; new ones apply at once (a config reload), dropping what is past them.
    package var limits: HistoryLimits {
        get { state.withLock { $0.limits } }
        set {
            state.withLock { state in
                state.limits = newValue
                guard state.disabled == nil else { return }
                let before = state.files.mapValues(\.count)
                let dropped = Self.prune(&state.files, limits: newValue)
                for (changed, versions) in state.files where versions.count != before[changed] {
                    VersionIndex.write(versions, of: changed, in: indexDirectory, logger: logger)
                }
                for object in dropped { unlink(objectPath(object)) }
            }
        }
    }

    /// The kept versions of `name`, oldest first (empty: none).
    package func versions(of name: String) -> [StoredVersion] { state.withLock { $0.files[name] ?? [] } }

    /// The newest kept version of `name`.
    package func latest(of name: String) -> StoredVersion? { state.withLock { $0.files[name]?.last } }

    /// The names that have kept versions, sorted.
    package var names: [String] { state.withLock { $0.files.keys.sorted() } }

    /// The bytes of all kept objects together (each distinct content once).
    package var totalBytes: Int {
        state.withLock { state in Self.objectSizes(state.files).values.reduce(0, +) }
    }

    /// Version `number` of `name`, checked against its hash.
    package func content(of name: String, number: Int) throws(HistoryError) -> [UInt8] {
        let version = try self.version(of: name, number: number)
        let bytes: [UInt8]
        do { bytes = try PlainFile.read(objectPath(version.hash)) } catch {
            throw HistoryError(.corrupt, "\(name)@\(number): its content (\(objectPath(version.hash))) cannot be read: \(error.message)")
        }
        guard SHA256.hex(bytes) == version.hash else {
            throw HistoryError(.corrupt, "\(name)@\(number): its content (\(objectPath(version.hash))) does not match its hash; it was changed or damaged")
        }
        return bytes
    }

    /// Version `number` of `name`'s entry.
    package func version(of name: String, number: Int) throws(HistoryError) -> StoredVersion {
        let versions = versions(of: name)
        guard let first = versions.first, let last = versions.last else { throw HistoryError(.noHistory, "\(name) has no kept versions") }
        guard let version = versions.first(where: { $0.number == number }) else {
            let kept = first.number == last.number ? "\(first.number)" : "\(first.number) to \(last.number)"
            throw HistoryError(.noSuchVersion, "\(name) has no version \(number) (kept: \(kept))")
        }
        return version
    }

    /// Keeps `content` as the newest version of `name`, unless it is already its newest (nil
    /// then, and when the history cannot be written: logged). Applies the retention limits.
    @discardableResult
    package func record(_ name: String, content: [UInt8], who: String, time: Double) -> Recorded? {
        let hash = SHA256.hex(content)
        return state.withLock { state -> Recorded? in
            guard state.disabled == nil else { return nil }
            let previous = state.files[name]?.last
            if previous?.hash == hash { return nil }
            do {
                try PlainFile.directory(directory)
                try PlainFile.directory(objectsDirectory)
                try PlainFile.directory(indexDirectory)
                // An object already there is used only when it holds these bytes: a damaged one is written again.
                if !Self.holds(objectPath(hash), content.count, hash) {
                    do { try AtomicFile.write(Data(content), to: objectPath(hash), mode: 0o600, durable: false) } catch { throw HistoryError(.io, "\(error)") }
                }
            } catch {
                logger.warning("version history: cannot keep \(name)'s new version: \(error)")
                return nil
            }
            let version = StoredVersion(number: (previous?.number ?? 0) + 1, hash: hash, bytes: content.count, time: time, who: who)
            state.files[name, default: []].append(version)
            let before = state.files.mapValues(\.count)
            let dropped = Self.prune(&state.files, limits: state.limits)
            // This file's index, and those retention took versions from.
            for (changed, versions) in state.files where changed == name || versions.count != before[changed] {
                VersionIndex.write(versions, of: changed, in: indexDirectory, logger: logger)
            }
            for object in dropped { unlink(objectPath(object)) }
            return Recorded(version: version, previous: previous)
        }
    }

    /// True when `path` is a regular file of `size` bytes whose SHA-256 is `hash`.
    private static func holds(_ path: String, _ size: Int, _ hash: String) -> Bool {
        guard PlainFile.kind(path) == .regular, let bytes = try? PlainFile.read(path, limit: size), bytes.count == size else { return false }
        return SHA256.hex(bytes) == hash
    }

    /// Drops versions past the limits (see ``HistoryLimits``); returns the hashes no version
    /// refers to any more.
    static func prune(_ files: inout [String: [StoredVersion]], limits: HistoryLimits) -> Set<String> {
        let before = Set(objectSizes(files).keys)
        for (name, versions) in files where versions.count > limits.versions {
            files[name] = Array(versions.suffix(max(1, limits.versions)))
        }
        var sizes = objectSizes(files)
        var total = sizes.values.reduce(0, +)
        while total > limits.bytes {
            // The oldest version that is not its file's newest.
            var oldest: (name: String, index: Int, time: Double)?
            for (name, versions) in files where versions.count > 1 {
                if oldest == nil || versions[0].time < oldest!.time || (versions[0].time == oldest!.time && name < oldest!.name) {
                    oldest = (name, 0, versions[0].time)
                }
            }
            guard let oldest else { break }
            let removed = files[oldest.name]!.remove(at: oldest.index)
            if !files.values.contains(where: { $0.contains { $0.hash == removed.hash } }) {
                total -= sizes[removed.hash] ?? 0
                sizes[removed.hash] = nil
            }
        }
        return before.subtracting(sizes.keys)
    }

    private static func objectSizes(_ files: [String: [StoredVersion]]) -> [String: Int] {
        var sizes: [String: Int] = [:]
        for versions in files.values { for version in versions { sizes[version.hash] = version.bytes } }
        return sizes
    }
}
