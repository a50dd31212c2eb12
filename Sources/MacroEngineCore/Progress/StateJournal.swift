import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The daemon's write-ahead log of progress values, beside the state file (`STATE.journal`):
/// one line of JSON with every channel's value per changing turn, appended with a single
/// `write(2)` before the turn's replies leave. That is what makes an answered call survive
/// `kill -9` for the price of one small write instead of a temporary file, a rename and (with
/// fsync) a directory sync. ``StateStore/load()`` applies the journal's last complete line over
/// the snapshot; when the journal passes ``compactionBytes`` it is folded into the snapshot and
/// truncated. A torn last line (power loss mid-write) is ignored: the line before it wins.
public final class StateJournal: Sendable {
    /// Past this size the journal is folded into the snapshot.
    public static let compactionBytes = 256 * 1024

    /// The snapshot store this journal belongs to.
    public let store: StateStore
    /// The journal file: the state file's path + `.journal`.
    public var path: String { store.journalPath }
    private let file = Mutex<OpenFile>(OpenFile())

    private struct OpenFile {
        var fd: Int32 = -1
        var size = 0
        var unsynced = false
        /// When the file was last checked for removal (uptime nanoseconds).
        var checkedAt: UInt64 = 0
    }

    /// How often an append checks that the journal was not removed under it: an `fstat` per
    /// append was a system call Redis does not make; a removal is seen within this time.
    public static let removalCheckNanoseconds: UInt64 = 100_000_000

    /// Nanoseconds between two removal checks (``removalCheckNanoseconds``; 0: every append).
    private let removalCheck: UInt64

    /// A journal for `store`'s state file; the file is opened on the first append.
    /// `removalCheck`: how often (nanoseconds) an append checks that the file is still there.
    public init(store: StateStore, removalCheck: UInt64 = StateJournal.removalCheckNanoseconds) {
        self.store = store
        self.removalCheck = removalCheck
    }

    deinit { file.locked { if $0.fd >= 0 { Glibc.close($0.fd) } } }

    /// Appends `values` as one line; `durable` adds an `fdatasync`. Throws a `.io` ``MacroError``
    /// naming the journal; after a failure the file is as it was before the call.
    public func append(_ values: [String: Double], durable: Bool) throws {
        let line = StateJournal.line(values)
        try file.locked { file in
            // Removed under us (e.g. `macro run --local` saved the same state file): start a new
            // journal rather than append to a file nobody will read.
            // (Checked at most every 100 ms: reading the monotonic clock is no system call.)
            let now = DispatchTime.now().uptimeNanoseconds
            if file.fd >= 0, now &- file.checkedAt >= removalCheck {
                file.checkedAt = now
                var info = stat()
                if fstat(file.fd, &info) == 0, info.st_nlink == 0 {
                    Glibc.close(file.fd)
                    file = OpenFile()
                }
            }
            if file.fd < 0 { try open(&file) }
            if file.size + line.count > Self.compactionBytes {
                try store.writeSnapshot(values, durable: durable)
                guard ftruncate(file.fd, 0) == 0 else { throw AtomicFile.failure("cannot truncate", path) }
                file.size = 0
                file.unsynced = false
                return
            }
            let written = line.withUnsafeBytes { Glibc.write(file.fd, $0.baseAddress!, $0.count) }
            guard written == line.count else {
                let error = AtomicFile.failure(written < 0 ? "cannot append to" : "short write to", path)
                _ = ftruncate(file.fd, off_t(file.size))
                throw error
            }
            file.size += written
            if durable {
                guard fdatasync(file.fd) == 0 else { throw AtomicFile.failure("cannot fsync", path) }
            } else {
                file.unsynced = true
            }
        }
    }

    /// `fdatasync`s the journal when something was appended since the last sync (the `interval`
    /// fsync policy calls this once per period).
    public func sync() throws {
        try file.locked { file in
            guard file.unsynced, file.fd >= 0 else { return }
            file.unsynced = false
            guard fdatasync(file.fd) == 0 else { throw AtomicFile.failure("cannot fsync", path) }
        }
    }

    /// Closes the journal, writes `values` as the snapshot (durably) and removes the journal.
    public func close(saving values: [String: Double]) throws {
        file.locked { file in
            if file.fd >= 0 { Glibc.close(file.fd) }
            file = OpenFile()
        }
        try store.save(values, durable: true)
    }

    private func open(_ file: inout OpenFile) throws {
        let directory = (path as NSString).deletingLastPathComponent
        try AtomicFile.createDirectory(directory.isEmpty ? "." : directory)
        let fd = Glibc.open(path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw AtomicFile.failure("cannot open", path) }
        var info = stat()
        fstat(fd, &info)
        file.fd = fd
        file.size = Int(info.st_size)
        file.checkedAt = removalCheck == 0 ? 0 : DispatchTime.now().uptimeNanoseconds
        // A torn last line (no newline) must not swallow the next one.
        var last: UInt8 = 0
        if file.size > 0, pread(fd, &last, 1, off_t(file.size - 1)) == 1, last != UInt8(ascii: "\n") {
            _ = Glibc.write(fd, "\n", 1)
            file.size += 1
        }
    }

    /// One journal line: the values as a JSON object with sorted keys, and a newline. Written
    /// into one array sized up front: numbers and names go in as bytes, no string per value.
    static func line(_ values: [String: Double]) -> [UInt8] {
        let entries = values.sorted { $0.key < $1.key }
        var bytes: [UInt8] = []
        // A name and its value are rarely longer than 32 bytes; past that the array grows.
        bytes.reserveCapacity(3 + entries.count * 32)
        bytes.append(UInt8(ascii: "{"))
        for (i, entry) in entries.enumerated() {
            if i > 0 { bytes.append(UInt8(ascii: ",")) }
            MacroValue.writeJSONString(entry.key, to: &bytes)
            bytes.append(UInt8(ascii: ":"))
            MacroValue.writeJSONNumber(entry.value, to: &bytes)
        }
        bytes.append(UInt8(ascii: "}"))
        bytes.append(UInt8(ascii: "\n"))
        return bytes
    }

    /// The values of the last complete, valid line of `data` (nil when there is none).
    static func lastValues(in data: Data) -> [String: Double]? {
        let lines = data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true)
        // A last line without its newline may be torn: only newline-terminated lines count.
        let complete = data.last == UInt8(ascii: "\n") ? lines[...] : lines.dropLast()
        for line in complete.reversed() {
            if let values = try? JSONDecoder().decode([String: Double].self, from: Data(line)),
               values.values.allSatisfy(\.isFinite) {
                return values
            }
        }
        return nil
    }
}
