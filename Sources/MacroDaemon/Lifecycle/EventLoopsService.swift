import NIOPosix

/// macrod's event loops (the engine's, and with `io_thread: separate` the connections' too):
/// shut down once every service after it in the chain has stopped, so nothing is scheduled on a
/// dead loop (the fsync timer's cancel, a connection's close), and before the stall guard stops.
final class EventLoopsService: DaemonService {
    private let group: MultiThreadedEventLoopGroup

    /// The loops `group` runs; they are already running.
    init(_ group: MultiThreadedEventLoopGroup) { self.group = group }

    /// Nothing: the loops run from the start (the engine needs one to load the macros).
    func start() {}

    /// Shuts the loops down (waits for the task each runs, e.g. a call past the grace period).
    func stop() async { try? await group.shutdownGracefully() }
}
