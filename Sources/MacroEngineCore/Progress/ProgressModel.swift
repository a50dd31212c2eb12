import Synchronization

/// A change of one channel, as observers see it.
public struct ProgressChange: Sendable, Hashable {
    /// The channel that changed.
    public var channel: String
    /// Its value before.
    public var oldValue: Double
    /// Its value after (already clamped).
    public var newValue: Double

    /// Creates a change record.
    public init(channel: String, oldValue: Double, newValue: Double) {
        self.channel = channel
        self.oldValue = oldValue
        self.newValue = newValue
    }
}

/// Identifies an observer so it can be removed.
public struct ProgressObserverToken: Sendable, Hashable {
    let id: Int
}

/// The native progress-model service: named channels clamped to their
/// ranges, observers told of every change. Thread-safe; observers run on the thread that made
/// the change, after the lock is released (so an observer may read or set values).
public final class ProgressModel: Sendable {
    /// The channels, in configuration order.
    public let channels: [ProgressChannel]
    private let state: Mutex<State>

    private struct State {
        var values: [Double]
        var observers: [(id: Int, body: @Sendable (ProgressChange) -> Void)] = []
        var nextObserver = 0
        /// The values when the current turn began (meaningful while ``inTurn``): a buffer of its
        /// own, copied into at each turn's start, so a turn allocates nothing (a copy of
        /// `values` would be copied again at the turn's first write).
        var journal: [Double]
        /// A turn is open.
        var inTurn = false
    }

    /// Creates a model. Channel names must be unique and ranges non-empty.
    public init(channels: [ProgressChannel] = ProgressChannel.rings) {
        precondition(Set(channels.map(\.name)).count == channels.count, "duplicate progress channel names")
        self.channels = channels
        let values = channels.map { $0.clamp($0.initial) }
        self.state = Mutex(State(values: values, journal: values))
    }

    /// The index of `channel`, or an `.invalidArgument` error listing the channels.
    func index(of channel: String) throws -> Int {
        guard let index = channels.firstIndex(where: { $0.name == channel }) else {
            throw MacroError(
                code: .invalidArgument,
                message: "no progress channel named '\(channel)' (channels: \(channels.map(\.name).joined(separator: ", ")))")
        }
        return index
    }

    /// The current value of `channel`.
    public func value(of channel: String) throws -> Double {
        let index = try index(of: channel)
        return state.locked { $0.values[index] }
    }

    /// All values, in channel order.
    public var values: [(channel: String, value: Double)] {
        let values = state.locked { $0.values }
        return zip(channels, values).map { ($0.name, $1) }
    }

    /// All values as of the last committed turn (during a turn, the values when it began): what
    /// another thread may show while JavaScript runs, never a half-done turn.
    public var committedValues: [(channel: String, value: Double)] {
        let values = state.locked { $0.inTurn ? $0.journal : $0.values }
        return zip(channels, values).map { ($0.name, $1) }
    }

    /// Calls `body` with each value as of the last committed turn (``committedValues``), by
    /// channel index, under the model's lock (no array: a run record reads them per run).
    public func forEachCommittedValue(_ body: (_ index: Int, _ value: Double) -> Void) {
        state.locked { state in
            if state.inTurn {
                for index in state.journal.indices { body(index, state.journal[index]) }
            } else {
                for index in state.values.indices { body(index, state.values[index]) }
            }
        }
    }

    /// All values by channel name.
    public var valuesByName: [String: Double] {
        // Straight into the dictionary (no list of pairs first): one allocation.
        state.locked { state in
            var byName = [String: Double](minimumCapacity: channels.count)
            for (index, channel) in channels.enumerated() { byName[channel.name] = state.values[index] }
            return byName
        }
    }

    /// The value of the channel at `index` (the engine's accessors; no name lookup).
    func value(at index: Int) -> Double {
        state.locked { $0.values[index] }
    }

    /// Sets the channel at `index` to a finite `value`, clamped (the engine's accessors).
    func set(at index: Int, to value: Double) {
        let clamped = channels[index].clamp(value)
        let (old, observers) = state.locked { state -> (Double, [(id: Int, body: @Sendable (ProgressChange) -> Void)]) in
            let old = state.values[index]
            state.values[index] = clamped
            return (old, old == clamped || state.inTurn ? [] : state.observers)
        }
        guard !observers.isEmpty else { return }
        let change = ProgressChange(channel: channels[index].name, oldValue: old, newValue: clamped)
        for observer in observers { observer.body(change) }
    }

    /// Sets `channel` to `value` clamped to its range and returns the stored value. A non-finite
    /// value is an `.invalidArgument` error and changes nothing. Observers hear of a real change.
    @discardableResult
    public func set(_ channel: String, to value: Double) throws -> Double {
        guard value.isFinite else {
            throw MacroError(code: .invalidArgument, message: "progress value for '\(channel)' must be a finite number, got \(value)")
        }
        let index = try index(of: channel)
        // Inside a turn, observers hear of the change when the turn commits.
        set(at: index, to: value)
        return channels[index].clamp(value)
    }

    // MARK: Turns (atomic changes from macros)

    /// Starts a turn: changes from now on are told to observers only when the turn commits, and
    /// are undone if it rolls back.
    public func beginTurn() {
        state.locked { state in
            // Element by element: the journal's buffer is reused, `values` stays unshared.
            for index in state.values.indices { state.journal[index] = state.values[index] }
            state.inTurn = true
        }
    }

    /// Ends a turn keeping its changes; observers hear one change per channel that differs from
    /// the turn's start (old value = at the start, new = now).
    public func commitTurn() {
        // No change (or no observer): nothing is copied. Otherwise the observers hear the
        // changes after the lock is released, from copies of the two lists (released before
        // the next turn, which then writes the buffers in place again).
        typealias Told = (start: [Double], end: [Double], observers: [(id: Int, body: @Sendable (ProgressChange) -> Void)])
        let told = state.locked { state -> Told? in
            guard state.inTurn else { return nil }
            state.inTurn = false
            guard !state.observers.isEmpty, state.journal != state.values else { return nil }
            return (state.journal, state.values, state.observers)
        }
        guard let told else { return }
        for i in channels.indices where told.start[i] != told.end[i] {
            let change = ProgressChange(channel: channels[i].name, oldValue: told.start[i], newValue: told.end[i])
            for observer in told.observers { observer.body(change) }
        }
    }

    /// Calls `body` with the open turn's changes so far: each channel whose value differs from
    /// the turn's start (none outside a turn), under the model's lock. For the run records,
    /// read before the turn commits or rolls back.
    public func forEachTurnChange(_ body: (_ channel: String, _ from: Double, _ to: Double) -> Void) {
        state.locked { state in
            guard state.inTurn else { return }
            for i in channels.indices where state.journal[i] != state.values[i] { body(channels[i].name, state.journal[i], state.values[i]) }
        }
    }

    /// Ends a turn undoing its changes; nobody ever hears of them.
    public func rollbackTurn() {
        state.locked { state in
            guard state.inTurn else { return }
            for index in state.values.indices { state.values[index] = state.journal[index] }
            state.inTurn = false
        }
    }

    /// Replaces values (e.g. from the state file) without telling observers. Unknown channels
    /// and non-finite values are ignored; values are clamped.
    public func restore(_ saved: [String: Double]) {
        state.locked { state in
            for (index, channel) in channels.enumerated() {
                if let value = saved[channel.name], value.isFinite { state.values[index] = channel.clamp(value) }
            }
        }
    }

    /// Adds an observer, told of every change (channel, old and new value).
    @discardableResult
    public func addObserver(_ observer: @escaping @Sendable (ProgressChange) -> Void) -> ProgressObserverToken {
        state.locked { state in
            state.nextObserver += 1
            state.observers.append((state.nextObserver, observer))
            return ProgressObserverToken(id: state.nextObserver)
        }
    }

    /// Removes an observer.
    public func removeObserver(_ token: ProgressObserverToken) {
        state.locked { state in state.observers.removeAll { $0.id == token.id } }
    }
}
