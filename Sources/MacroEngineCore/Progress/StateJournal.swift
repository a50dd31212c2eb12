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
/// truncated. A torn last line (power loss mid-write) is ignored: the line before it wins. Other
/// lines that cannot be used make ``StateStore/load(warnings:)`` warn and keep the journal aside.
/// The file is opened without following a symbolic link, and must be a regular file.
public final class StateJournal: Sendable {
    /// Past this size the journal is folded into the snapshot.
    public static let compactionBytes = 256 * 1024

    /// The snapshot store this journal belongs to.
    public let store: StateStore
    /// The journal file: the state file's path + `.journal`.
    public var path: String { store.journalPath }
    private let file: Mutex<AppendOnlyFile>

    /// How often an append checks that the journal was not removed or moved aside under it: an
    /// `lstat` per append was a system call Redis does not make; a removal is seen within this time.
    public static let removalCheckNanoseconds: UInt64 = 100_000_000

    /// A journal for `store`'s state file; the file is opened on the first append.
    /// `removalCheck`: how often (nanoseconds) an append checks that the file is still there.
    public init(store: StateStore, removalCheck: UInt64 = StateJournal.removalCheckNanoseconds) {
        self.store = store
        file = Mutex(AppendOnlyFile(path: store.journalPath, what: "state journal", removalCheck: removalCheck))
    }

    deinit { file.locked { $0.close() } }

    /// Appends `values` as one line; `durable` adds an `fdatasync`. Throws a `.io` ``MacroError``
    /// naming the journal; after a failure the file is as it was before the call.
    public func append(_ values: [String: Double], durable: Bool) throws {
        // The line is made in stack memory (no array per append); a line too long for it is
        // made as an array.
        let written = try withUnsafeTemporaryAllocation(byteCount: Self.stackLineBytes, alignment: 1) { stack -> Bool in
            guard let length = Self.line(values, into: stack) else { return false }
            try append(line: UnsafeRawBufferPointer(rebasing: stack[..<length]), values: values, durable: durable)
            return true
        }
        if !written { try StateJournal.line(values).withUnsafeBytes { try append(line: $0, values: values, durable: durable) } }
    }

    /// The longest line made in stack memory (a few dozen channels).
    static let stackLineBytes = 1024

    /// Appends `line` (the line of `values`), under the file's lock.
    private func append(line: UnsafeRawBufferPointer, values: [String: Double], durable: Bool) throws {
        try file.locked { file in
            // Removed or moved aside under us (`macro run --local` saved the same state file, or
            // found the journal corrupt): a new journal rather than a file nobody will read.
            try file.prepare()
            if file.size + line.count > Self.compactionBytes {
                try store.writeSnapshot(values, durable: durable)
                try file.truncate()
                return
            }
            try file.append(line, durable: durable)
        }
    }

    /// `fdatasync`s the journal when something was appended since the last sync (the `interval`
    /// fsync policy calls this once per period).
    public func sync() throws {
        try file.locked { try $0.sync() }
    }

    /// Closes the journal, writes `values` as the snapshot (durably) and removes the journal.
    public func close(saving values: [String: Double]) throws {
        file.locked { $0.close() }
        try store.save(values, durable: true)
    }

    /// Opens (creating) the journal now rather than at the first append, so that a state
    /// location that cannot be written is known from the start. Throws as ``append(_:durable:)``.
    public func prepare() throws {
        try file.locked { try $0.prepare() }
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

    /// ``line(_:)`` written into `buffer`: its length, or nil when it does not fit (or there are
    /// more than 64 channels). The names are put in order in stack memory, not in an array.
    static func line(_ values: [String: Double], into buffer: UnsafeMutableRawBufferPointer) -> Int? {
        guard values.count <= 64 else { return nil }
        return withUnsafeTemporaryAllocation(of: Dictionary<String, Double>.Index.self, capacity: values.count) { order -> Int? in
            // Insertion sort of the entries' positions by name: the same order as `sorted`.
            order.initialize(repeating: values.startIndex)
            var count = 0
            var position = values.startIndex
            while position != values.endIndex {
                var slot = count
                while slot > 0, values[position].key < values[order[slot - 1]].key {
                    order[slot] = order[slot - 1]
                    slot -= 1
                }
                order[slot] = position
                count += 1
                position = values.index(after: position)
            }
            var sink = RawLineSink(buffer: buffer)
            sink.writeJSONByte(UInt8(ascii: "{"))
            for i in 0..<count {
                if i > 0 { sink.writeJSONByte(UInt8(ascii: ",")) }
                let entry = values[order[i]]
                MacroValue.writeJSONString(entry.key, to: &sink)
                sink.writeJSONByte(UInt8(ascii: ":"))
                MacroValue.writeJSONNumber(entry.value, to: &sink)
            }
            sink.writeJSONByte(UInt8(ascii: "}"))
            sink.writeJSONByte(UInt8(ascii: "\n"))
            return sink.overflowed ? nil : sink.count
        }
    }

    /// What ``scan(_:)`` found in a journal.
    struct Scan {
        /// The values of the last usable line (nil: none).
        var values: [String: Double]?
        /// That line's number (one-based).
        var valuesLine: Int?
        /// How many complete lines could not be used.
        var problems = 0
        /// The first of them: its number and what was wrong.
        var firstProblem: (line: Int, reason: String)?
    }

    /// Every line of a journal checked: the last usable one's values, and the lines that cannot
    /// be used (not JSON, not an object, a value that is not a finite number). A last line
    /// without its newline is torn by a crash mid-write and is no problem when it could be the
    /// start of a line (`{` and text); binary data there is one.
    static func scan(_ data: Data) -> Scan {
        var scan = Scan()
        var number = 0
        var start = data.startIndex
        while start < data.endIndex {
            number += 1
            let end = data[start...].firstIndex(of: UInt8(ascii: "\n"))
            let line = data[start..<(end ?? data.endIndex)]
            start = end.map { $0 + 1 } ?? data.endIndex
            if line.isEmpty { continue }
            let reason: String?
            if end == nil {
                reason =
                    line.first == UInt8(ascii: "{") && !line.contains(where: { $0 < 0x20 || $0 == 0x7F })
                    ? nil : "an unfinished last line that is not the start of one (binary data?)"
                if reason == nil { break }
            } else {
                reason = problem(in: line, values: &scan.values)
                if reason == nil { scan.valuesLine = number }
            }
            if let reason {
                scan.problems += 1
                if scan.firstProblem == nil { scan.firstProblem = (number, reason) }
            }
        }
        return scan
    }

    /// Why `line` is no journal line (nil: it is one; `values` are set to its values).
    private static func problem(in line: Data, values: inout [String: Double]?) -> String? {
        let parsed: MacroValue
        do {
            parsed = try JSONParser.parse(line)
        } catch {
            return error.kind == .numberOutOfRange ? "a number too large for a double" : "not JSON: \(error.message)"
        }
        guard case .object(let fields) = parsed else { return "not a JSON object" }
        var found: [String: Double] = [:]
        for (name, value) in fields {
            guard case .number(let number) = value, number.isFinite else { return "the value of '\(name)' is not a number" }
            found[name] = number
        }
        values = found
        return nil
    }

    /// The values of the last complete, valid line of `data` (nil when there is none).
    static func lastValues(in data: Data) -> [String: Double]? { scan(data).values }
}

/// A JSON sink into fixed memory (a journal line on the stack); past its end it notes the
/// overflow and drops the rest.
struct RawLineSink: JSONByteSink {
    let buffer: UnsafeMutableRawBufferPointer
    var count = 0
    var overflowed = false

    init(buffer: UnsafeMutableRawBufferPointer) { self.buffer = buffer }

    mutating func writeJSONByte(_ byte: UInt8) {
        guard count < buffer.count else { overflowed = true; return }
        buffer[count] = byte
        count += 1
    }

    mutating func writeJSONBytes(_ bytes: UnsafeRawBufferPointer) {
        guard !bytes.isEmpty else { return }
        guard bytes.count <= buffer.count - count else { overflowed = true; return }
        (buffer.baseAddress! + count).copyMemory(from: bytes.baseAddress!, byteCount: bytes.count)
        count += bytes.count
    }
}
