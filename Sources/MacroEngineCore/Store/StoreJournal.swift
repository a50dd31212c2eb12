import Foundation
import MacroBase
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Where the macros' stores persist, beside the state file: a snapshot
/// (`STATE.store.json`: `{"version": 1, "stores": {"MACRO": {"KEY": VALUE}}}`) and a journal of
/// the changes since (`STATE.store.journal`). The daemon appends one journal line per group
/// commit, in the same step and under the same `fsync` policy as the progress values' journal,
/// before the commit's replies leave; a line is a JSON array of the commit's changes in order,
/// `["MACRO", "KEY", VALUE]` for a set and `["MACRO", "KEY"]` for a delete. Replaying the lines
/// over the snapshot is idempotent, so a crash between a compaction's snapshot and its
/// truncation loses nothing. A torn last line (a crash mid-write) is ignored; a journal or a
/// snapshot that cannot be read is moved aside (kept, never deleted) with a warning.
public final class StoreJournal: Sendable {
    /// The snapshot file.
    public let snapshotPath: String
    /// The journal file.
    public var journalPath: String { snapshotPath.replacingSuffix(".json", with: ".journal") }
    private let file: Mutex<AppendOnlyFile>
    /// The snapshot's size as last written or read (no `stat` per append).
    private let snapshotBytes = Atomic<Int>(-1)

    /// The journal is folded into the snapshot when it passes this size, or the snapshot's size
    /// if that is larger (so a large store is not rewritten for every few changes).
    public static let compactionBytes = 1 << 20

    /// A journal beside `stateFile` (the progress state file).
    public init(stateFile: String, removalCheck: UInt64 = StateJournal.removalCheckNanoseconds) {
        snapshotPath = stateFile + ".store.json"
        file = Mutex(AppendOnlyFile(path: stateFile + ".store.journal", what: "store journal", removalCheck: removalCheck))
    }

    deinit { file.locked { $0.close() } }

    // MARK: Writing

    /// Appends `changes` as one line; when the journal has grown past its bound, writes
    /// `store`'s whole content as the snapshot instead and empties the journal. `durable` adds
    /// an `fdatasync`. Throws a `.io` ``MacroError``; after a failure the files are as they were.
    public func append(_ changes: [StoreChange], store: MacroStore, durable: Bool) throws {
        guard !changes.isEmpty else { return }
        let line = Self.line(changes)
        try file.locked { file in
            try file.prepare()
            if file.size + line.count > max(Self.compactionBytes, snapshotSize) {
                try writeSnapshot(store.all, durable: durable)
                try file.truncate()
                return
            }
            try line.withUnsafeBytes { try file.append($0, durable: durable) }
        }
    }

    /// Opens (creating) the journal now, so that a location that cannot be written is known at start.
    public func prepare() throws {
        try file.locked { try $0.prepare() }
    }

    /// `fdatasync`s the journal when something was appended since the last sync.
    public func sync() throws {
        try file.locked { try $0.sync() }
    }

    /// Closes the journal, writes `stores` as the snapshot (durably) and removes the journal.
    public func close(saving stores: [String: [String: String]]) throws {
        try file.locked { file in
            file.close()
            try writeSnapshot(stores, durable: true)
            if unlink(file.path) != 0 && errno != ENOENT { throw AtomicFile.failure("cannot remove", file.path) }
        }
    }

    private var snapshotSize: Int {
        let known = snapshotBytes.load(ordering: .relaxed)
        if known >= 0 { return known }
        var info = stat()
        let size = stat(snapshotPath, &info) == 0 ? Int(info.st_size) : 0
        snapshotBytes.store(size, ordering: .relaxed)
        return size
    }

    /// Writes the snapshot (an empty store list removes it).
    func writeSnapshot(_ stores: [String: [String: String]], durable: Bool) throws {
        var bytes: [UInt8] = Array(#"{"version":1,"stores":{"#.utf8)
        for (i, macro) in stores.keys.sorted().enumerated() {
            if i > 0 { bytes.append(UInt8(ascii: ",")) }
            bytes.append(UInt8(ascii: "\n"))
            MacroValue.writeJSONString(macro, to: &bytes)
            bytes.append(contentsOf: Array(":{".utf8))
            for (j, key) in stores[macro]!.keys.sorted().enumerated() {
                if j > 0 { bytes.append(UInt8(ascii: ",")) }
                MacroValue.writeJSONString(key, to: &bytes)
                bytes.append(UInt8(ascii: ":"))
                bytes.append(contentsOf: Array(stores[macro]![key]!.utf8))
            }
            bytes.append(UInt8(ascii: "}"))
        }
        bytes.append(contentsOf: Array("}}\n".utf8))
        try AtomicFile.write(Data(bytes), to: snapshotPath, mode: 0o600, durable: durable)
        snapshotBytes.store(bytes.count, ordering: .relaxed)
    }

    /// One journal line for `changes`.
    static func line(_ changes: [StoreChange]) -> [UInt8] {
        var bytes: [UInt8] = [UInt8(ascii: "[")]
        bytes.reserveCapacity(changes.reduce(2) { $0 + $1.macro.utf8.count + $1.key.utf8.count + ($1.json?.utf8.count ?? 0) + 12 })
        for (i, change) in changes.enumerated() {
            if i > 0 { bytes.append(UInt8(ascii: ",")) }
            bytes.append(UInt8(ascii: "["))
            MacroValue.writeJSONString(change.macro, to: &bytes)
            bytes.append(UInt8(ascii: ","))
            MacroValue.writeJSONString(change.key, to: &bytes)
            if let json = change.json {
                bytes.append(UInt8(ascii: ","))
                bytes.append(contentsOf: Array(json.utf8))
            }
            bytes.append(UInt8(ascii: "]"))
        }
        bytes.append(contentsOf: Array("]\n".utf8))
        return bytes
    }

    // MARK: Reading

    /// The stores as the snapshot and the journal leave them (macro: key: JSON text). What could
    /// not be read is moved aside and named in `warnings`; a symbolic link is not followed.
    public func load(warnings: inout [StateWarning]) -> [String: [String: String]] {
        var stores: [String: [String: String]] = [:]
        if let data = read(snapshotPath, what: "store snapshot", warnings: &warnings) {
            do {
                let value = try JSONParser.parse(data)
                guard value["version"].doubleValue == 1, let macros = value["stores"].objectValue else {
                    throw StoreFileProblem("not a store snapshot of version 1")
                }
                for (macro, entries) in macros {
                    guard let entries = entries.objectValue else { throw StoreFileProblem("the store of '\(macro)' is not an object") }
                    stores[macro] = Dictionary(uniqueKeysWithValues: entries.map { ($0.key, $0.value.jsonText()) })
                }
            } catch {
                stores = [:]
                warnings.append(moveAside(snapshotPath, what: "store snapshot", reason: "\(error)", then: "the stores start empty, then the journal is applied"))
            }
        }
        guard let data = read(journalPath, what: "store journal", warnings: &warnings) else { return stores }
        var number = 0
        var bad: (line: Int, reason: String)?
        var start = data.startIndex
        while start < data.endIndex {
            number += 1
            let end = data[start...].firstIndex(of: UInt8(ascii: "\n"))
            let line = data[start..<(end ?? data.endIndex)]
            start = end.map { $0 + 1 } ?? data.endIndex
            // A last line without its newline was torn by a crash mid-write: never acknowledged.
            if line.isEmpty || end == nil { continue }
            do {
                guard case .array(let changes) = try JSONParser.parse(line) else { throw StoreFileProblem("not a JSON array") }
                for change in changes {
                    guard case .array(let parts) = change, parts.count == 2 || parts.count == 3, let macro = parts[0].stringValue,
                        let key = parts[1].stringValue
                    else { throw StoreFileProblem("a change is not [macro, key] or [macro, key, value]") }
                    stores[macro, default: [:]][key] = parts.count == 3 ? parts[2].jsonText() : nil
                }
            } catch {
                bad = (number, "\(error)")
                break
            }
        }
        if let bad {
            warnings.append(
                moveAside(
                    journalPath, what: "store journal", reason: "line \(bad.line) cannot be used (\(bad.reason))",
                    then: "the changes before that line are used"))
            // What was used lives on in the snapshot.
            try? writeSnapshot(stores.filter { !$0.value.isEmpty }, durable: true)
        }
        return stores.filter { !$0.value.isEmpty }
    }

    /// The bytes of `path`; nil when it does not exist or cannot be read (then a warning).
    private func read(_ path: String, what: String, warnings: inout [StateWarning]) -> Data? {
        var info = stat()
        guard lstat(path, &info) == 0 else {
            if errno != ENOENT && errno != ENOTDIR {
                warnings.append(StateWarning(code: .journalUnreadable, message: "cannot read the \(what) \(path): \(String(cString: strerror(errno))); ignored", file: path))
            }
            return nil
        }
        do {
            return try StateStore.readRegularFile(path, what: "the \(what)", following: false)
        } catch let error as MacroError {
            warnings.append(StateWarning(code: .journalUnreadable, message: "\(error.message); ignored", file: path))
            return nil
        } catch {
            return nil
        }
    }

    private func moveAside(_ path: String, what: String, reason: String, then: String) -> StateWarning {
        let target = StateStore.asideName(for: path)
        guard rename(path, target) == 0 else {
            return StateWarning(
                code: .journalUnreadable, message: "\(what) \(path): \(reason); \(then); it could not be moved aside (\(String(cString: strerror(errno))))", file: path)
        }
        return StateWarning(code: .journalMovedAside, message: "\(what) \(path): \(reason); kept as \(target) (never deleted); \(then)", file: path)
    }
}

/// Why a store file cannot be used.
struct StoreFileProblem: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

extension String {
    fileprivate func replacingSuffix(_ suffix: String, with replacement: String) -> String {
        hasSuffix(suffix) ? String(dropLast(suffix.count)) + replacement : self + replacement
    }
}
