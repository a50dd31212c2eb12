import NIOCore
import Synchronization

/// The directory watcher's events, debounced on the engine's loop: an editor's save is several
/// inotify events (write, rename, attribute change) within a few milliseconds; the first one of
/// an event schedules its handling `delay` later, and the same event meanwhile is absorbed.
final class WatchDebouncer: Sendable {
    private let loop: any EventLoop
    private let delay: TimeAmount
    private let pending = Mutex<Set<DirectoryWatcher.Event>>([])
    private let handle: @Sendable (DirectoryWatcher.Event) -> Void

    /// Handles each event on `loop`, `delay` after the first of a burst.
    init(loop: any EventLoop, delay: TimeAmount, handle: @escaping @Sendable (DirectoryWatcher.Event) -> Void) {
        self.loop = loop
        self.delay = delay
        self.handle = handle
    }

    /// An event from the watcher (any thread).
    func receive(_ event: DirectoryWatcher.Event) {
        guard pending.withLock({ $0.insert(event).inserted }) else { return }
        loop.scheduleTask(in: delay) { [self] in
            _ = pending.withLock { $0.remove(event) }
            handle(event)
        }
    }
}
