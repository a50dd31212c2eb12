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
    private let hub: NotificationHub
    private let persistence: StatePersistence
    private let laneState: NIOLoopBoundBox<EngineLane.State>
    /// Changes the model reported, and how many of them were published.
    private let changes = Atomic<Int>(0)
    private let published = Atomic<Int>(0)
    private let sequence = Atomic<Int>(0)

    init(model: ProgressModel, hub: NotificationHub, persistence: StatePersistence, laneState: NIOLoopBoundBox<EngineLane.State>) {
        self.model = model
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

    /// Publishes the model's change, once, if anything changed since the last publication.
    /// On the engine's loop.
    func publishIfChanged() {
        let current = changes.load(ordering: .relaxed)
        guard published.exchange(current, ordering: .relaxed) != current else { return }
        let seq = sequence.add(1, ordering: .relaxed).newValue
        // Addressed now: whoever subscribes later does not get this change.
        var notification: PreparedNotification?
        if hub.hasSubscribers(.progress), case .object(var fields) = values() {
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
