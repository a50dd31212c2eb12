import Synchronization

/// How many connections subscribe to each event kind, kept as subscriptions change, so the hot
/// path asks "does anyone listen?" with one atomic load instead of a lock per connection.
final class SubscriberCounts: Sendable {
    private let progress = Atomic<Int>(0)
    private let macros = Atomic<Int>(0)
    private let log = Atomic<Int>(0)
    private let runs = Atomic<Int>(0)

    /// Adds `delta` subscribers of each of `kinds`.
    func add(_ kinds: some Sequence<EventKind>, _ delta: Int) {
        for kind in kinds {
            switch kind {
            case .progress: progress.add(delta, ordering: .relaxed)
            case .macros: macros.add(delta, ordering: .relaxed)
            case .log: log.add(delta, ordering: .relaxed)
            case .runs: runs.add(delta, ordering: .relaxed)
            }
        }
    }

    /// True when at least one connection subscribes to `kind`.
    func any(_ kind: EventKind) -> Bool {
        switch kind {
        case .progress: progress.load(ordering: .relaxed) > 0
        case .macros: macros.load(ordering: .relaxed) > 0
        case .log: log.load(ordering: .relaxed) > 0
        case .runs: runs.load(ordering: .relaxed) > 0
        }
    }
}
