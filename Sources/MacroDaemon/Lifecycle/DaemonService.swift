import ServiceLifecycle

/// One of macrod's long-running parts (the stall guard, the watcher, the socket listener...).
/// ``ServiceChain`` runs it as a swift-service-lifecycle `Service`: it starts once the part it
/// follows has started, serves, and stops when the `ServiceGroup` shuts it down (in the reverse
/// order of the chain), or when a part after it could not start.
protocol DaemonService: AnyObject, Sendable {
    /// Starts it. When it throws, macrod does not serve: nothing after it starts, and every part
    /// that started stops, in reverse order.
    func start() async throws
    /// Serves until graceful shutdown (the default). Returning by itself shuts the group down.
    func serve() async
    /// Stops what ``start()`` began (only called when it started).
    func stop() async throws
}

extension DaemonService {
    /// Waits for graceful shutdown (or cancellation).
    func serve() async { await waitForShutdown() }

    /// Returns when the group shuts this service down gracefully (or cancels it).
    func waitForShutdown() async { try? await gracefulShutdown() }
}
