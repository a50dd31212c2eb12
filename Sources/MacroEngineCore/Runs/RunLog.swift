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
    /// Origins waiting in ``State/origins`` (a run's start looks there only when some are).
    private let expectedOrigins = Atomic<Int>(0)
    /// The channels' names, in order (the records keep values by index until they end).
    let channelNames: [String]

    /// One macro's records, oldest first (ring buffers of boxes: keeping and dropping one moves
    /// a reference, never a record).
    private struct Rings {
        var ok = CircularBuffer<Kept>()
        var failed = CircularBuffer<Kept>()
    }

    /// A finished record, boxed once.
    private final class Kept: Sendable {
        let record: RunRecord
        init(_ record: RunRecord) { self.record = record }
    }

    private struct State {
        var limits: Limits
        /// Who starts a run nobody named.
        var defaultOrigin = "call"
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
        channelNames = model.channels.map(\.name)
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

    /// Call `call`, about to start, was started by `origin` (`dashboard`, `trigger:every`, ...);
    /// without this a run's origin is ``defaultOrigin``.
    public func expect(origin: String, call: Int) {
        state.withLock { $0.origins[call] = origin }
        expectedOrigins.add(1, ordering: .relaxed)
    }

    /// Who started a run nobody said (``expect(origin:call:)``) started: macrod's socket clients.
    public var defaultOrigin: String {
        get { state.withLock { $0.defaultOrigin } }
        set { state.withLock { $0.defaultOrigin = newValue } }
    }

    /// A run of `macro` begins: its draft, which the call carries (no lock while it runs). The
    /// values and the store are read as the run finds them; nothing else is done until it ends.
    func began(call: Int, macro: String, version: UInt64?, arguments: [MacroValue]) -> RunDraft {
        let draft = RunDraft(call: call, macro: macro, version: version, arguments: arguments, began: NIODeadline.now().uptimeNanoseconds)
        draft.valuesBefore = model.committedValueArray
        draft.storeBefore = store.committedEntries(macro, upTo: Self.storeSnapshotBytes)
        if expectedOrigins.load(ordering: .relaxed) > 0 {
            draft.origin = state.withLock { $0.origins.removeValue(forKey: call) }
            if draft.origin != nil { expectedOrigins.subtract(1, ordering: .relaxed) }
        }
        return draft
    }

    /// A turn of the draft's run ends, before its changes commit (or roll back, `failed`): what
    /// it changed is read now. `began`/`ended`: the turn's uptime nanoseconds.
    func turnEnding(_ draft: RunDraft, failed: Bool, began: UInt64, ended: UInt64) {
        let ms = Double(ended &- began) / 1e6
        draft.javascriptMs += ms
        if draft.turns.count < Self.turnsKept {
            draft.turns.append(RunRecord.Turn(atMs: Double(began &- draft.began) / 1e6, ms: ms))
        } else {
            draft.turnsDropped += 1
        }
        for change in model.turnChanges() {
            draft.changes.append(RunRecord.Change(channel: change.channel, from: change.from, to: change.to, kept: !failed))
        }
        for edit in store.turnChanges() where edit.macro == draft.macro {
            draft.storeChanges.append(RunRecord.StoreEdit(key: edit.key, from: edit.from, to: edit.to, kept: !failed))
        }
    }

    /// The draft's run ended with `outcome`: its record joins its macro's rings.
    func finished(_ draft: RunDraft, outcome: Result<MacroValue, any Error>) {
        let totalMs = Double(NIODeadline.now().uptimeNanoseconds &- draft.began) / 1e6
        var record = draft.record(startedAt: Date().timeIntervalSince1970 - totalMs / 1000, totalMs: totalMs, channels: channelNames)
        switch outcome {
        case .success(let value): record.result = value
        case .failure(let error): record.error = (error as? MacroError) ?? MacroError(code: .threw, message: "\(error)", macro: record.macro)
        }
        record.bytes = Self.size(of: record)
        let recorded = state.withLock { state -> (@Sendable (RunRecord) -> Void)? in
            if record.origin.isEmpty { record.origin = state.defaultOrigin }
            record.id = state.nextID
            state.nextID += 1
            Self.keep(record, in: &state)
            return state.recorded
        }
        recorded?(record)
    }

    /// Records call `call` of `macro` as a failure with `reason` without its details: the engine
    /// is being restarted under it (the stall recovery's thread cannot read the running call).
    public func abandoned(call: Int, macro: String, reason: String) {
        let record = RunRecord(
            id: 0, call: call, macro: macro, version: nil, origin: "", startedAt: Date().timeIntervalSince1970, arguments: [], channels: [], values: [])
        var failed = record
        failed.error = MacroError(code: .timeout, message: reason, macro: macro)
        failed.totalMs = 0
        state.withLock { state in
            failed.origin = state.defaultOrigin
            failed.id = state.nextID
            state.nextID += 1
            Self.keep(failed, in: &state)
        }
    }

    /// Roughly the bytes a record holds.
    static func size(of record: RunRecord) -> Int {
        var bytes = 256 + record.changes.count * 48 + record.console.reduce(0) { $0 + $1.message.utf8.count + 32 }
        bytes += record.storeChanges.reduce(0) { $0 + $1.key.utf8.count + ($1.from?.utf8.count ?? 0) + ($1.to?.utf8.count ?? 0) + 32 }
        bytes += record.arguments.reduce(0) { $0 + size(of: $1) } + (record.result.map { size(of: $0) } ?? 0)
        bytes += (record.error?.message.utf8.count ?? 0) + (record.error?.stack?.utf8.count ?? 0)
        bytes += record.storeBefore?.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count } ?? 0
        return bytes
    }

    private static func keep(_ record: RunRecord, in state: inout State) {
        // In place: a copy of the rings out of the dictionary and back would copy every record.
        let limit = record.failed ? state.limits.failedPerMacro : state.limits.perMacro
        var dropped = 0
        // Moved out of the dictionary and back: the rings stay uniquely referenced, so nothing is copied.
        var rings = state.finished.removeValue(forKey: record.macro) ?? Rings()
        let kept = Kept(record)
        if record.failed {
            rings.failed.append(kept)
            while rings.failed.count > limit { dropped += rings.failed.removeFirst().record.bytes }
        } else {
            rings.ok.append(kept)
            while rings.ok.count > limit { dropped += rings.ok.removeFirst().record.bytes }
        }
        state.finished[record.macro] = rings
        state.bytes += record.bytes - dropped
        // Past the bytes: the oldest success of any macro first, then the oldest failure.
        while state.bytes > state.limits.bytes {
            guard let (macro, failed) = oldest(in: state) else { break }
            if failed {
                state.bytes -= state.finished[macro]!.failed.removeFirst().record.bytes
            } else {
                state.bytes -= state.finished[macro]!.ok.removeFirst().record.bytes
            }
        }
    }

    /// The macro whose oldest record goes next: a success if any is kept.
    private static func oldest(in state: State) -> (String, Bool)? {
        var best: (String, Bool, Int)?
        for failed in [false, true] {
            for (macro, rings) in state.finished {
                guard let first = (failed ? rings.failed.first : rings.ok.first)?.record else { continue }
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

    // MARK: Reading

    /// Finished records, oldest first: of `macro` (nil: every macro), only failures when `failed`,
    /// at most the last `limit`.
    public func list(macro: String? = nil, failed: Bool = false, limit: Int = .max) -> [RunRecord] {
        let records = state.withLock { state in
            (macro.map { [$0] } ?? Array(state.finished.keys)).flatMap { name -> [RunRecord] in
                guard let rings = state.finished[name] else { return [] }
                return (failed ? Array(rings.failed) : Array(rings.ok) + Array(rings.failed)).map(\.record)
            }
        }
        return Array(records.sorted { $0.id < $1.id }.suffix(limit))
    }

    /// Record `id`, when it is kept.
    public func record(_ id: Int) -> RunRecord? {
        state.withLock { state in
            for rings in state.finished.values {
                if let found = rings.ok.first(where: { $0.record.id == id }) ?? rings.failed.first(where: { $0.record.id == id }) { return found.record }
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
