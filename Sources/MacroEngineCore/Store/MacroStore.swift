import MacroBase
import Synchronization

/// One change of a store: `json` is the key's new value as JSON text, nil when it was deleted.
public struct StoreChange: Sendable, Hashable {
    /// The macro whose store changed.
    public var macro: String
    /// The key.
    public var key: String
    /// The new value's JSON text; nil: the key was deleted.
    public var json: String?

    /// A change record.
    public init(macro: String, key: String, json: String?) {
        self.macro = macro
        self.key = key
        self.json = json
    }
}

/// What macros remember between calls: one key-value store per macro, values kept as JSON text.
/// It is engine state that changes atomically with JavaScript turns, as the progress model does
/// (a ``TurnParticipant``): a turn that throws, is cancelled or times out leaves no change. The
/// committed changes wait for the daemon's group commit to journal them (``takeUnjournaled()``,
/// each key's latest value), so a store change is on disk before the reply that follows it leaves.
/// Each macro's store holds at most ``limit`` bytes (its keys' and values' UTF-8 bytes); a `set`
/// that would pass it is refused whole. Thread-safe; the engine calls it on its loop.
public final class MacroStore: Sendable {
    /// The default per-macro limit (`store_limit_bytes`): 1 MiB.
    public static let defaultLimit = 1 << 20
    /// The longest key, in UTF-8 bytes.
    public static let maximumKeyBytes = 1024

    private let state: Mutex<State>
    /// Whether any store ever held an entry (set by ``set(_:_:json:)`` and ``restore(_:)``,
    /// never cleared): until then a run's record reads the stores without a lock.
    private let everUsed = Atomic<Bool>(false)

    /// One macro's entries and their size.
    struct Entries {
        var values: [String: String] = [:]
        var bytes = 0
    }

    /// A key of one macro's store.
    struct Key: Hashable {
        var macro: String
        var key: String
    }

    private struct State {
        var stores: [String: Entries] = [:]
        var limit: Int
        var inTurn = false
        /// The open turn's keys, each with its value when the turn first touched it (nil: not
        /// set): a rollback writes these back, a commit journals the keys whose value differs.
        /// One entry per key, however often the turn writes it (a key the turn created and
        /// deleted is dropped), so an endless loop of writes cannot grow it.
        var turnStart: [Key: String?] = [:]
        /// Whether committed changes are kept for a journal (macrod: ``takeUnjournaled()``).
        var records = false
        /// Committed changes not yet journaled: each key's latest value (nil: deleted).
        var unjournaled: [Key: String?] = [:]
    }

    /// An empty store whose macros may hold `limit` bytes each.
    public init(limit: Int = MacroStore.defaultLimit) {
        state = Mutex(State(limit: limit))
    }

    /// The per-macro limit in bytes.
    public var limit: Int {
        get { state.withLock { $0.limit } }
        set { state.withLock { $0.limit = newValue } }
    }

    /// The size a key and its value count for.
    static func size(key: String, json: String) -> Int { key.utf8.count + json.utf8.count }

    // MARK: Reading

    /// The JSON text of `key` in `macro`'s store, or nil.
    public func json(_ macro: String, _ key: String) -> String? {
        state.withLock { $0.stores[macro]?.values[key] }
    }

    /// The keys of `macro`'s store, sorted.
    public func keys(_ macro: String) -> [String] {
        state.withLock { ($0.stores[macro]?.values.keys).map { $0.sorted() } ?? [] }
    }

    /// All of `macro`'s entries (key: JSON text).
    public func entries(_ macro: String) -> [String: String] {
        state.withLock { $0.stores[macro]?.values ?? [:] }
    }

    /// `macro`'s entries as of the last committed turn (during a turn, as it began): what
    /// another thread may read while JavaScript runs, never a half-done turn.
    public func committedEntries(_ macro: String) -> [String: String] {
        state.withLock { state in
            var values = state.stores[macro]?.values ?? [:]
            for (key, old) in state.turnStart where key.macro == macro { values[key.key] = old }
            return values
        }
    }

    /// ``committedEntries(_:)`` when the store holds at most `limit` bytes, else nil; one lock.
    public func committedEntries(_ macro: String, upTo limit: Int) -> [String: String]? {
        guard everUsed.load(ordering: .acquiring) else { return [:] }
        return state.withLock { state in
            guard let entries = state.stores[macro] else { return state.turnStart.isEmpty ? [:] : Self.committed(macro, [:], state) }
            guard entries.bytes <= limit else { return nil }
            return state.turnStart.isEmpty ? entries.values : Self.committed(macro, entries.values, state)
        }
    }

    private static func committed(_ macro: String, _ values: [String: String], _ state: State) -> [String: String] {
        var values = values
        for (key, old) in state.turnStart where key.macro == macro { values[key.key] = old }
        return values
    }

    /// The bytes `macro`'s store holds.
    public func bytes(_ macro: String) -> Int {
        state.withLock { $0.stores[macro]?.bytes ?? 0 }
    }

    /// The macros with a non-empty store, sorted, with their sizes.
    public var macros: [(macro: String, keys: Int, bytes: Int)] {
        state.withLock { state in
            state.stores.filter { !$0.value.values.isEmpty }.sorted { $0.key < $1.key }.map { ($0.key, $0.value.values.count, $0.value.bytes) }
        }
    }

    /// Every store, for a snapshot (macro: key: JSON text).
    public var all: [String: [String: String]] {
        state.withLock { $0.stores.filter { !$0.value.values.isEmpty }.mapValues(\.values) }
    }

    // MARK: Writing

    /// Sets `key` of `macro`'s store to `json` (JSON text). Throws a `.invalidArgument`
    /// ``MacroError`` (a RangeError in JavaScript) when the key is empty or too long, or when the
    /// store would pass its limit; nothing is written then. Inside a turn the change commits or
    /// rolls back with it; outside one it is committed at once.
    public func set(_ macro: String, _ key: String, json: String) throws {
        try Self.check(key: key)
        guard Self.depth(of: json) <= JSONParser.defaultMaximumDepth else {
            throw MacroError(
                code: .invalidArgument, message: "store.set: '\(key)' is nested deeper than \(JSONParser.defaultMaximumDepth) levels; nothing was written",
                errorName: "RangeError", macro: macro)
        }
        try state.withLock { state in
            let old = state.stores[macro]?.values[key]
            let before = state.stores[macro]?.bytes ?? 0
            let after = before - (old.map { Self.size(key: key, json: $0) } ?? 0) + Self.size(key: key, json: json)
            guard after <= state.limit || after <= before else {
                throw MacroError(
                    code: .invalidArgument,
                    message:
                        "store.set: '\(key)' would make the store of macro '\(macro)' \(after) bytes, over its limit of \(state.limit) (store_limit_bytes); nothing was written",
                    errorName: "RangeError", macro: macro)
            }
            everUsed.store(true, ordering: .releasing)
            Self.apply(&state, StoreChange(macro: macro, key: key, json: json), old: old)
        }
    }

    /// Deletes `key` from `macro`'s store; whether it was there. Inside a turn, as ``set(_:_:json:)``.
    @discardableResult
    public func delete(_ macro: String, _ key: String) -> Bool {
        state.withLock { state in
            guard let old = state.stores[macro]?.values[key] else { return false }
            Self.apply(&state, StoreChange(macro: macro, key: key, json: nil), old: old)
            return true
        }
    }

    /// Empties `macro`'s store; how many keys it held.
    @discardableResult
    public func clear(_ macro: String) -> Int {
        state.withLock { state in
            guard let entries = state.stores[macro] else { return 0 }
            for (key, old) in entries.values.sorted(by: { $0.key < $1.key }) {
                Self.apply(&state, StoreChange(macro: macro, key: key, json: nil), old: old)
            }
            return entries.values.count
        }
    }

    /// A key the store accepts: not empty, at most ``maximumKeyBytes``.
    static func check(key: String) throws {
        guard !key.isEmpty else {
            throw MacroError(code: .invalidArgument, message: "store: a key must not be empty", errorName: "TypeError")
        }
        guard key.utf8.count <= maximumKeyBytes else {
            throw MacroError(
                code: .invalidArgument, message: "store: a key is at most \(maximumKeyBytes) bytes, got one of \(key.utf8.count)", errorName: "RangeError")
        }
    }

    /// How deeply arrays and objects nest in `json` (strings skipped).
    static func depth(of json: String) -> Int {
        var depth = 0, deepest = 0, inString = false, escaped = false
        for byte in json.utf8 {
            if inString {
                if escaped { escaped = false } else if byte == UInt8(ascii: "\\") { escaped = true } else if byte == UInt8(ascii: "\"") { inString = false }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""): inString = true
            case UInt8(ascii: "["), UInt8(ascii: "{"):
                depth += 1
                deepest = max(deepest, depth)
            case UInt8(ascii: "]"), UInt8(ascii: "}"): depth -= 1
            default: break
            }
        }
        return deepest
    }

    private static func apply(_ state: inout State, _ change: StoreChange, old: String?) {
        write(&state.stores, change)
        let key = Key(macro: change.macro, key: change.key)
        if state.inTurn {
            if let index = state.turnStart.index(forKey: key) {
                // Created by this turn and deleted again: no change at all.
                if state.turnStart.values[index] == nil, change.json == nil { state.turnStart.remove(at: index) }
            } else {
                state.turnStart.updateValue(old, forKey: key)
            }
        } else if state.records {
            state.unjournaled.updateValue(change.json, forKey: key)
        }
    }

    /// Writes `change` into `stores`, keeping the byte count.
    private static func write(_ stores: inout [String: Entries], _ change: StoreChange) {
        var entries = stores[change.macro] ?? Entries()
        if let old = entries.values[change.key] { entries.bytes -= size(key: change.key, json: old) }
        if let json = change.json {
            entries.values[change.key] = json
            entries.bytes += size(key: change.key, json: json)
        } else {
            entries.values[change.key] = nil
        }
        stores[change.macro] = entries.values.isEmpty ? nil : entries
    }

    /// The open turn's changes so far: each key whose value differs from the turn's start
    /// (JSON text; nil: not set), by macro and key. For the run records, read before the turn
    /// commits or rolls back.
    public func turnChanges() -> [(macro: String, key: String, from: String?, to: String?)] {
        guard everUsed.load(ordering: .acquiring) else { return [] }
        return state.withLock { state in
            guard state.inTurn, !state.turnStart.isEmpty else { return [] }
            return state.turnStart.compactMap { key, old in
                let now = state.stores[key.macro]?.values[key.key]
                return now == old ? nil : (key.macro, key.key, old, now)
            }.sorted { ($0.macro, $0.key) < ($1.macro, $1.key) }
        }
    }

    // MARK: Journal

    /// Whether committed changes wait to be journaled.
    public var hasUnjournaled: Bool { state.withLock { !$0.unjournaled.isEmpty } }

    /// Keeps committed changes for ``takeUnjournaled()`` from now on (macrod's journal); without
    /// it (`macro --local`, which saves the whole store at the end) none are kept.
    public func recordChanges() {
        state.withLock { $0.records = true }
    }

    /// The committed changes since the last call, one per key (its latest value), ordered by
    /// macro and key; the caller journals them.
    public func takeUnjournaled() -> [StoreChange] {
        state.withLock { state in
            guard !state.unjournaled.isEmpty else { return [] }
            defer { state.unjournaled.removeAll(keepingCapacity: true) }
            return state.unjournaled.map { StoreChange(macro: $0.key.macro, key: $0.key.key, json: $0.value) }
                .sorted { ($0.macro, $0.key) < ($1.macro, $1.key) }
        }
    }

    /// Replaces every store with `stores` (macro: key: JSON text), as loaded from disk: no
    /// change is journaled. Entries past a limit are kept (they were accepted under another one).
    public func restore(_ stores: [String: [String: String]]) {
        state.withLock { state in
            state.stores = [:]
            for (macro, values) in stores where !values.isEmpty {
                var entries = Entries(values: values)
                entries.bytes = values.reduce(0) { $0 + Self.size(key: $1.key, json: $1.value) }
                state.stores[macro] = entries
                everUsed.store(true, ordering: .releasing)
            }
            state.unjournaled.removeAll()
        }
    }
}

extension MacroStore: TurnParticipant {
    /// A turn starts: changes from now on commit or roll back with it.
    public func beginTurn() {
        state.withLock { $0.inTurn = true }
    }

    /// The turn succeeded: the keys whose value it changed wait for the journal.
    public func commitTurn() {
        state.withLock { state in
            state.inTurn = false
            guard !state.turnStart.isEmpty else { return }
            if state.records {
                for (key, old) in state.turnStart {
                    let now = state.stores[key.macro]?.values[key.key]
                    if now != old { state.unjournaled.updateValue(now, forKey: key) }
                }
            }
            state.turnStart.removeAll(keepingCapacity: true)
        }
    }

    /// The turn failed: every key it touched gets its value from the turn's start back.
    public func rollbackTurn() {
        state.withLock { state in
            state.inTurn = false
            guard !state.turnStart.isEmpty else { return }
            for (key, old) in state.turnStart { Self.write(&state.stores, StoreChange(macro: key.macro, key: key.key, json: old)) }
            state.turnStart.removeAll(keepingCapacity: true)
        }
    }
}
