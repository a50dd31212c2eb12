import Foundation
import MacroBase
import NIOCore
import Synchronization

/// Every run on the record: engine state that the engine feeds as runs start, log, change the
/// rings and the store, and end, whatever started them. Finished records are kept per macro in
/// two rings, successes and failures, each bounded by count, and all of them by bytes: past the
/// bound the oldest success goes first, so failures outlive successes. Thread-safe; fed on the
/// engine's loop.
public final class RunLog: Sendable {
    /// How many records are kept.
    public struct Limits: Sendable, Equatable {
        /// Successful runs kept per macro (`runs_kept`).
        public var perMacro: Int
        /// Failed runs kept per macro (`failed_runs_kept`).
        public var failedPerMacro: Int
        /// All records together, in bytes (`runs_bytes`).
        public var bytes: Int

        /// Limits; the defaults are the config's.
        public init(perMacro: Int = 50, failedPerMacro: Int = 200, bytes: Int = 16 << 20) {
            self.perMacro = perMacro
            self.failedPerMacro = failedPerMacro
            self.bytes = bytes
        }
    }

    /// Console lines kept per run.
    public static let consoleLines = 200
    /// Turns kept per run (an endless timer keeps its first ones).
    public static let turnsKept = 200
    /// A store up to this size is copied into the record when the run starts (for a replay).
    public static let storeSnapshotBytes = 64 << 10

    private let model: ProgressModel
    private let store: MacroStore
    private let state: Mutex<State>

    /// One macro's records, oldest first (ring buffers: dropping the oldest moves nothing).
    private struct Rings {
        var ok = CircularBuffer<RunRecord>()
        var failed = CircularBuffer<RunRecord>()
    }

    private struct State {
        var limits: Limits
        /// Runs going, by call id.
        var running: [Int: RunRecord] = [:]
        /// The next run's id (past every loaded one).
        var nextID = 1
        /// Who starts the calls about to begin, by call id (``expect(origin:call:)``).
        var origins: [Int: String] = [:]
        var finished: [String: Rings] = [:]
        var bytes = 0
        var recorded: (@Sendable (RunRecord) -> Void)?
    }

    /// A log of the runs changing `model` and `store`.
    public init(model: ProgressModel, store: MacroStore, limits: Limits = Limits()) {
        self.model = model
        self.store = store
        state = Mutex(State(limits: limits))
    }

    /// The limits (a config reload may change them; the rings shrink at the next record).
    public var limits: Limits {
        get { state.withLock { $0.limits } }
        set { state.withLock { $0.limits = newValue } }
    }

    /// Called with each finished record, on the engine's loop (`run.recorded`).
    public var onRecorded: (@Sendable (RunRecord) -> Void)? {
        get { state.withLock { $0.recorded } }
        set { state.withLock { $0.recorded = newValue } }
    }

    // MARK: Fed by the engine

    /// Call `call`, about to start, was started by `origin` (`socket`, `dashboard`, `trigger:every`, ...).
    public func expect(origin: String, call: Int) {
        state.withLock { $0.origins[call] = origin }
    }

    /// A run of `macro` begins.
    func began(call: Int, macro: String, version: UInt64?, arguments: [MacroValue]) {
        var values: [String: Double] = [:]
        for (channel, value) in model.committedValues { values[channel] = value }
        let storeBefore = store.bytes(macro) <= Self.storeSnapshotBytes ? store.committedEntries(macro) : nil
        let now = Date().timeIntervalSince1970
        let uptime = Double(NIODeadline.now().uptimeNanoseconds) / 1e6
        state.withLock { state in
            let origin = state.origins.removeValue(forKey: call) ?? "call"
            var record = RunRecord(
                id: state.nextID, call: call, macro: macro, version: version.map { String($0, radix: 16) }, origin: origin, startedAt: now, arguments: arguments,
                valuesBefore: values, storeBefore: storeBefore)
            record.startUptimeMs = uptime
            state.nextID += 1
            state.running[call] = record
        }
    }

    /// A console line of call `call`.
    func console(call: Int, level: String, message: String) {
        state.withLock { state in
            guard state.running[call] != nil else { return }
            if state.running[call]!.console.count < Self.consoleLines {
                state.running[call]!.console.append((level, message))
                state.running[call]!.bytes += message.utf8.count + 32
            } else {
                state.running[call]!.consoleDropped += 1
            }
        }
    }

    /// A turn of call `call` ends, before its changes commit (or roll back, `failed`): what it
    /// changed is read now. `began`/`ended`: the turn's uptime nanoseconds.
    func turnEnding(call: Int, failed: Bool, began: UInt64, ended: UInt64) {
        let changes = model.turnChanges()
        let edits = store.turnChanges()
        state.withLock { state in
            guard var record = state.running.removeValue(forKey: call) else { return }
            defer { state.running[call] = record }
            let ms = Double(ended &- began) / 1e6
            record.javascriptMs += ms
            if record.turns.count < Self.turnsKept {
                record.turns.append(((Double(began) / 1e6) - record.startUptimeMs, ms))
            } else {
                record.turnsDropped += 1
            }
            for change in changes {
                record.changes.append(RunRecord.Change(channel: change.channel, from: change.from, to: change.to, kept: !failed))
            }
            for edit in edits where edit.macro == record.macro {
                record.storeChanges.append(RunRecord.StoreEdit(key: edit.key, from: edit.from, to: edit.to, kept: !failed))
                record.bytes += edit.key.utf8.count + (edit.from?.utf8.count ?? 0) + (edit.to?.utf8.count ?? 0) + 32
            }
            record.bytes += changes.count * 48
        }
    }

    /// Call `call` ended with `outcome`: its record joins its macro's rings.
    func finished(call: Int, outcome: Result<MacroValue, any Error>) {
        let now = Date().timeIntervalSince1970
        let finished = state.withLock { state -> (RunRecord, (@Sendable (RunRecord) -> Void)?)? in
            guard var record = state.running.removeValue(forKey: call) else { return nil }
            record.totalMs = (now - record.startedAt) * 1000
            switch outcome {
            case .success(let value):
                record.result = value
                record.bytes += Self.size(of: value)
            case .failure(let error):
                record.error = (error as? MacroError) ?? MacroError(code: .threw, message: "\(error)", macro: record.macro)
                record.bytes += (record.error?.message.utf8.count ?? 0) + (record.error?.stack?.utf8.count ?? 0)
            }
            record.bytes += record.arguments.reduce(0) { $0 + Self.size(of: $1) }
            Self.keep(record, in: &state)
            return (record, state.recorded)
        }
        if let (record, recorded) = finished { recorded?(record) }
    }

    private static func keep(_ record: RunRecord, in state: inout State) {
        // In place: a copy of the rings out of the dictionary and back would copy every record.
        let limit = record.failed ? state.limits.failedPerMacro : state.limits.perMacro
        var dropped = 0
        if record.failed {
            state.finished[record.macro, default: Rings()].failed.append(record)
            while state.finished[record.macro]!.failed.count > limit { dropped += state.finished[record.macro]!.failed.removeFirst().bytes }
        } else {
            state.finished[record.macro, default: Rings()].ok.append(record)
            while state.finished[record.macro]!.ok.count > limit { dropped += state.finished[record.macro]!.ok.removeFirst().bytes }
        }
        state.bytes += record.bytes - dropped
        // Past the bytes: the oldest success of any macro first, then the oldest failure.
        while state.bytes > state.limits.bytes {
            guard let (macro, failed) = oldest(in: state) else { break }
            if failed { state.bytes -= state.finished[macro]!.failed.removeFirst().bytes } else { state.bytes -= state.finished[macro]!.ok.removeFirst().bytes }
        }
    }

    /// The macro whose oldest record goes next: a success if any is kept.
    private static func oldest(in state: State) -> (String, Bool)? {
        var best: (String, Bool, Int)?
        for failed in [false, true] {
            for (macro, rings) in state.finished {
                guard let first = failed ? rings.failed.first : rings.ok.first else { continue }
                if best == nil || first.id < best!.2 { best = (macro, failed, first.id) }
            }
            if let best { return (best.0, best.1) }
        }
        return nil
    }

    /// Roughly the bytes of `value`'s JSON.
    static func size(of value: MacroValue) -> Int {
        switch value {
        case .string(let text): return text.utf8.count + 2
        case .array(let items): return items.reduce(2) { $0 + size(of: $1) + 1 }
        case .object(let fields): return fields.reduce(2) { $0 + $1.key.utf8.count + 4 + size(of: $1.value) }
        default: return 8
        }
    }

    /// Ends every run still going with `reason` (a timeout): the engine is being restarted
    /// under them, so their records are kept as the failures they are.
    public func abandonRunning(reason: String) {
        let ids = state.withLock { Array($0.running.keys) }
        for id in ids {
            let macro = state.withLock { $0.running[id]?.macro }
            finished(call: id, outcome: .failure(MacroError(code: .timeout, message: reason, macro: macro)))
        }
    }

    // MARK: Reading

    /// Finished records, oldest first: of `macro` (nil: every macro), only failures when `failed`,
    /// at most the last `limit`.
    public func list(macro: String? = nil, failed: Bool = false, limit: Int = .max) -> [RunRecord] {
        let records = state.withLock { state in
            (macro.map { [$0] } ?? Array(state.finished.keys)).flatMap { name -> [RunRecord] in
                guard let rings = state.finished[name] else { return [] }
                return failed ? Array(rings.failed) : Array(rings.ok) + Array(rings.failed)
            }
        }
        return Array(records.sorted { $0.id < $1.id }.suffix(limit))
    }

    /// Record `id` (finished or still running).
    public func record(_ id: Int) -> RunRecord? {
        state.withLock { state in
            if let running = state.running.values.first(where: { $0.id == id }) { return running }
            for rings in state.finished.values {
                if let found = rings.ok.first(where: { $0.id == id }) ?? rings.failed.first(where: { $0.id == id }) { return found }
            }
            return nil
        }
    }

    /// How many records are kept, and their bytes.
    public var count: (records: Int, bytes: Int) {
        state.withLock { state in (state.finished.values.reduce(0) { $0 + $1.ok.count + $1.failed.count }, state.bytes) }
    }

    // MARK: Kept across restarts

    /// Writes the finished records to `path` (JSON lines, oldest first), atomically.
    public func save(to path: String) throws {
        var text = ""
        for record in list() { text += record.json.jsonText() + "\n" }
        try AtomicFile.write(Data(text.utf8), to: path, mode: 0o600, durable: false)
    }

    /// Reads records saved by ``save(to:)``; a file that is not there is none. Lines that cannot
    /// be read are skipped and counted.
    @discardableResult
    public func load(from path: String) -> (loaded: Int, skipped: Int) {
        guard let data = FileManager.default.contents(atPath: path) else { return (0, 0) }
        var loaded = 0, skipped = 0
        state.withLock { state in
            for line in data.split(separator: UInt8(ascii: "\n")) where !line.isEmpty {
                guard let value = try? JSONParser.parse(line), let record = RunRecord(json: value), record.ended else {
                    skipped += 1
                    continue
                }
                Self.keep(record, in: &state)
                state.nextID = max(state.nextID, record.id + 1)
                loaded += 1
            }
        }
        return (loaded, skipped)
    }
}
