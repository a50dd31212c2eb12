import MacroEngineCore
import MacroRPC
import NIOCore
import Synchronization

/// Turns the progress model's changes into `progress.changed` notifications: one per turn that
/// changed the model (a request, a timer, a promise continuation), `seq` +1 each. The change is
/// journaled (``StatePersistence``) before its notification and its reply leave; inside a batch
/// both wait for the batch's commit (``GroupCommit``).
final class ProgressPublisher: Sendable {
    private let model: ProgressModel
    private let store: MacroStore
    private let hub: NotificationHub
    private let persistence: StatePersistence
    private let laneState: NIOLoopBoundBox<EngineLane.State>
    /// Changes the model reported, and how many of them were published.
    private let changes = Atomic<Int>(0)
    private let published = Atomic<Int>(0)
    private let sequence = Atomic<Int>(0)

    init(model: ProgressModel, store: MacroStore, hub: NotificationHub, persistence: StatePersistence, laneState: NIOLoopBoundBox<EngineLane.State>) {
        self.model = model
        self.store = store
        self.hub = hub
        self.persistence = persistence
        self.laneState = laneState
        model.addObserver { [weak self] _ in self?.changes.add(1, ordering: .relaxed) }
    }

    /// The `seq` of the last published change.
    var seq: Int { sequence.load(ordering: .relaxed) }

    /// The channels' values as `{name: value}`: the committed ones (safe off the engine's loop,
    /// never a turn in progress) or the current ones (on the engine's loop).
    func values(committed: Bool = false) -> MacroValue {
        var fields = OrderedFields()
        for (channel, value) in committed ? model.committedValues : model.values { fields[channel] = .number(value) }
        return .object(fields)
    }

    /// Publishes the model's change, once, if anything changed since the last publication; a
    /// store change is journaled with it (it has no notification). On the engine's loop.
    func publishIfChanged() {
        let current = changes.load(ordering: .relaxed)
        let modelChanged = published.exchange(current, ordering: .relaxed) != current
        guard modelChanged || store.hasUnjournaled else { return }
        // Addressed now: whoever subscribes later does not get this change.
        var notification: PreparedNotification?
        let seq = modelChanged ? sequence.add(1, ordering: .relaxed).newValue : 0
        if modelChanged, hub.hasSubscribers(.progress), case .object(var fields) = values() {
            fields["seq"] = .number(Double(seq))
            notification = hub.prepare(.progress, RPCNotification.progressChanged.rawValue, .object(fields))
        }
        let commit = laneState.value.commit
        if commit.isOpen {
            commit.modelChanged(notification: notification)
            return
        }
        persistence.append()
        if let notification { publish(notification) }
    }

    /// Sends one `progress.changed` to the subscribers it was addressed to.
    func publish(_ notification: PreparedNotification) {
        hub.deliver(notification)
    }
}
