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
    /// The most bytes of console text a run's record keeps (later lines are counted, not kept).
    public static let consoleBytesKept = 256 << 10
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
    /// a reference, never a record). A class, so that the log can keep the last macro's at hand
    /// (``State/last``) and a run of the same macro as the one before needs no lookup.
    private final class Rings {
        var ok = CircularBuffer<Kept>()
        var failed = CircularBuffer<Kept>()

        /// Appends `kept` to its ring, dropping the oldest past `limit` (their bytes added to
        /// `dropped`). Returns a dropped draft that nothing else holds (no reader, no listener),
        /// for the next run to reuse.
        func keep(_ kept: Kept, failed isFailure: Bool, limit: Int, dropped: inout Int) -> Kept? {
            var spare: Kept?
            if isFailure {
                failed.append(kept)
                while failed.count > limit {
                    var first = failed.removeFirst()
                    dropped += first.bytes
                    if spare == nil, isKnownUniquelyReferenced(&first.draft) { spare = first }
                }
            } else {
                ok.append(kept)
                while ok.count > limit {
                    var first = ok.removeFirst()
                    dropped += first.bytes
                    if spare == nil, isKnownUniquelyReferenced(&first.draft) { spare = first }
                }
            }
            return spare
        }
    }

    /// A finished run: its sealed draft (one reference: keeping and dropping it moves a pointer).
    ///
    /// `@unchecked Sendable`: a draft is written only on the engine's loop and only before it is
    /// sealed, which happens before it joins the rings under the log's lock; from then on it is
    /// read only, and only under that lock.
    ///
    /// A dropped draft that nothing else references goes back to the engine's loop for the next
    /// run (``finished(_:outcome:atTurnEnd:)``'s result): only the loop touches it from then on.
    struct Kept: @unchecked Sendable {
        fileprivate(set) var draft: RunDraft
        var id: Int { draft.id }
        var bytes: Int { draft.bytes }
        func record(channels: [String]) -> RunRecord { draft.record(channels: channels, defaultOrigin: "") }
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
        /// The macro whose run was kept last, and its rings.
        var lastMacro = ""
        var lastRings: Rings?
        var bytes = 0
        var recorded: (@Sendable (_ record: () -> RunRecord) -> Void)?
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

    /// Called as each run ends, on the engine's loop (`run.recorded`), with what builds its
    /// record: a listener that wants it calls it there and then (a run nobody listens to is
    /// never copied).
    public var onRecorded: (@Sendable (_ record: () -> RunRecord) -> Void)? {
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
    /// `spare`: a draft an earlier ``finished(_:outcome:atTurnEnd:)`` gave back, reused.
    func began(call: Int, macro: String, version: UInt64?, arguments: [MacroValue], spare: RunDraft? = nil) -> RunDraft {
        // Its start is its first turn's (``turnEnding``): no clock read here.
        let draft: RunDraft
        if let spare {
            spare.reuse(call: call, macro: macro, version: version, arguments: arguments)
            draft = spare
        } else {
            draft = RunDraft(call: call, macro: macro, version: version, arguments: arguments, began: 0, startedAt: 0)
        }
        model.forEachCommittedValue { index, value in draft.valueBefore(index, value) }
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
        guard !draft.sealed else { return }
        if draft.began == 0 {
            draft.began = began
            draft.startedAt = wallOffset + Double(began) / 1e9
        }
        draft.lastTurnEnded = ended
        let ms = Double(ended &- began) / 1e6
        draft.javascriptMs += ms
        if draft.turnCount < Self.turnsKept {
            draft.add(RunRecord.Turn(atMs: Double(began &- draft.began) / 1e6, ms: ms))
        } else {
            draft.turnsDropped += 1
        }
        model.forEachTurnChange { channel, from, to in draft.add(RunRecord.Change(channel: channel, from: from, to: to, kept: !failed)) }
        for edit in store.turnChanges() where edit.macro == draft.macro {
            draft.storeChanges.append(RunRecord.StoreEdit(key: edit.key, from: edit.from, to: edit.to, kept: !failed))
        }
    }

    /// The draft's run ended with `outcome`: the draft, sealed, joins its macro's rings.
    /// `atTurnEnd`: the turn it ended in has just ended (its end is the run's; no clock read).
    /// Returns a draft the rings dropped and nothing else holds, for the next ``began``.
    @discardableResult
    func finished(_ draft: RunDraft, outcome: Result<MacroValue, any Error>, atTurnEnd: Bool = false) -> RunDraft? {
        guard !draft.sealed else { return nil }
        let ended = atTurnEnd && draft.lastTurnEnded != 0 ? draft.lastTurnEnded : NIODeadline.now().uptimeNanoseconds
        if draft.began == 0 {
            // No turn of its own reached the record (it failed before its JavaScript ran).
            draft.began = ended
            draft.startedAt = wallOffset + Double(ended) / 1e9
        }
        draft.totalMs = Double(ended &- draft.began) / 1e6
        let failed: Bool
        switch outcome {
        case .success(let value):
            // A result past the bound is kept as a note of its size: one run cannot push every
            // other record out of runs_bytes.
            if case .number = value {
                draft.result = value
            } else {
                let bytes = Self.size(of: value)
                draft.result = bytes <= Self.valueBytesKept ? value : .string("(a result of about \(bytes) bytes of JSON; a record keeps \(Self.valueBytesKept))")
            }
            failed = false
        case .failure(let error):
            var kept = (error as? MacroError) ?? MacroError(code: .threw, message: "\(error)", macro: draft.macro)
            kept.message = Self.cut(kept.message)
            kept.stack = kept.stack.map(Self.cut)
            draft.error = kept
            failed = true
        }
        draft.bytes = Self.size(of: draft)
        draft.sealed = true
        let (recorded, spare) = state.withLock { state -> ((@Sendable (_ record: () -> RunRecord) -> Void)?, Kept?) in
            if draft.origin == nil { draft.origin = state.defaultOrigin }
            draft.id = state.nextID
            state.nextID += 1
            let spare = Self.keep(Kept(draft: draft), macro: draft.macro, failed: failed, in: &state)
            return (state.recorded, spare)
        }
        if let recorded {
            let channels = channelNames
            recorded { state.withLock { _ in draft.record(channels: channels, defaultOrigin: "") } }
        }
        return spare?.draft
    }

    /// The wall clock minus the uptime clock, in seconds, read once: a run's start is its uptime
    /// plus this (one clock read per run, not two; a wall-clock step after this is not seen).
    private let wallOffset: Double = {
        var wall = timespec()
        clock_gettime(CLOCK_REALTIME, &wall)
        return Double(wall.tv_sec) + Double(wall.tv_nsec) / 1e9 - Double(NIODeadline.now().uptimeNanoseconds) / 1e9
    }()

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
            Self.keep(Kept(draft: RunDraft(sealed: failed)), macro: macro, failed: true, in: &state)
        }
    }

    /// The most of a result, an error's message or its stack that a record keeps (bytes; the
    /// console's lines are cut at 65,536 characters as they are logged).
    public static let valueBytesKept = 64 << 10

    /// `text`, cut to ``valueBytesKept`` bytes with a note of what was cut.
    static func cut(_ text: String) -> String {
        let count = text.utf8.count
        guard count > valueBytesKept else { return text }
        let kept = String(decoding: text.utf8.prefix(valueBytesKept), as: UTF8.self)
        return kept + "\u{2026} [\(count - kept.utf8.count) more bytes cut]"
    }

    /// Roughly the bytes a run's record holds.
    static func size(of draft: RunDraft) -> Int {
        // The arrays are looked at only when not empty (most runs have no console line, store
        // edit, or store snapshot).
        var bytes = 256 + draft.changeCount * 48 + draft.argumentsSize + (draft.turnCount > 1 ? draft.turnCount * 24 : 0)
        if !draft.console.isEmpty {
            for line in draft.console { bytes += line.message.utf8.count + 32 }
        }
        if !draft.storeChanges.isEmpty {
            for edit in draft.storeChanges { bytes += edit.key.utf8.count + (edit.from?.utf8.count ?? 0) + (edit.to?.utf8.count ?? 0) + 32 }
        }
        if let result = draft.result { bytes += size(of: result) }
        if draft.failed, let error = draft.error { bytes += error.message.utf8.count + (error.stack?.utf8.count ?? 0) }
        if let store = draft.storeBefore, !store.isEmpty {
            for (key, value) in store { bytes += key.utf8.count + value.utf8.count }
        }
        return bytes
    }

    /// Keeps `kept` in its macro's rings; returns a dropped draft nothing else holds.
    @discardableResult
    private static func keep(_ kept: Kept, macro: String, failed: Bool, in state: inout State) -> Kept? {
        let limit = failed ? state.limits.failedPerMacro : state.limits.perMacro
        var dropped = 0
        let rings: Rings
        if let last = state.lastRings, state.lastMacro == macro {
            rings = last
        } else {
            if let found = state.finished[macro] {
                rings = found
            } else {
                rings = Rings()
                state.finished[macro] = rings
            }
            state.lastMacro = macro
            state.lastRings = rings
        }
        let spare = rings.keep(kept, failed: failed, limit: limit, dropped: &dropped)
        state.bytes += kept.bytes - dropped
        // Past the bytes: the oldest success of any macro first, then the oldest failure.
        while state.bytes > state.limits.bytes {
            guard let (macro, failed) = oldest(in: state) else { break }
            if failed {
                state.bytes -= state.finished[macro]!.failed.removeFirst().bytes
            } else {
                state.bytes -= state.finished[macro]!.ok.removeFirst().bytes
            }
        }
        return spare
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

    // MARK: Reading

    /// Finished records, oldest first: of `macro` (nil: every macro), only failures when `failed`,
    /// at most the last `limit`.
    public func list(macro: String? = nil, failed: Bool = false, limit: Int = .max) -> [RunRecord] {
        let records = state.withLock { state in
            (macro.map { [$0] } ?? Array(state.finished.keys)).flatMap { name -> [RunRecord] in
                guard let rings = state.finished[name] else { return [] }
                return (failed ? Array(rings.failed) : Array(rings.ok) + Array(rings.failed)).map { $0.record(channels: channelNames) }
            }
        }
        return Array(records.sorted { $0.id < $1.id }.suffix(limit))
    }

    /// Record `id`, when it is kept.
    public func record(_ id: Int) -> RunRecord? {
        state.withLock { state in
            for rings in state.finished.values {
                if let found = rings.ok.first(where: { $0.id == id }) ?? rings.failed.first(where: { $0.id == id }) {
                    return found.record(channels: channelNames)
                }
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
                Self.keep(Kept(draft: RunDraft(sealed: record)), macro: record.macro, failed: record.failed, in: &state)
                state.nextID = max(state.nextID, record.id + 1)
                loaded += 1
            }
        }
        return (loaded, skipped)
    }
}
