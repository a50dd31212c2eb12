import Foundation
import MacroRPC

/// The exporter's hold on a feed's thread: stops it, and gives it credits so that at most a few
/// records wait between the socket and the tracer (a slow collector slows the reading; macrod
/// then drops a subscriber that far behind and the reconnect catches up from its records).
///
/// `@unchecked Sendable`: `client`, `continuation` and `stopping` are read and written under
/// `lock` only. The feed's thread uses the client; the other thread only calls its
/// `shutdownWrite()`, a shutdown(2) of a descriptor that stays open while the client is
/// referenced here (macrod then closes the connection and the thread's read returns).
public final class FeedControl: @unchecked Sendable {
    private let lock = NSLock()
    private var client: RPCClient?
    private var stopping = false
    private let credits: DispatchSemaphore
    let continuation: AsyncThrowingStream<FeedEvent, any Error>.Continuation

    init(continuation: AsyncThrowingStream<FeedEvent, any Error>.Continuation, credits: Int) {
        self.continuation = continuation
        self.credits = DispatchSemaphore(value: max(1, credits))
    }

    /// Whether ``stop()`` was called.
    public var isStopping: Bool { lock.withLock { stopping } }

    /// Stops the feed: its stream finishes, and its connection is shut down.
    public func stop() {
        let client = lock.withLock { () -> RPCClient? in
            stopping = true
            return self.client
        }
        continuation.finish()
        client?.shutdownWrite()
        credits.signal()
    }

    /// The exporter is done with one event: the thread may hand over another.
    public func consumed() { credits.signal() }

    /// The feed's thread: `client` is its connection (false: already stopping).
    func attach(_ client: RPCClient) -> Bool {
        lock.withLock {
            guard !stopping else { return false }
            self.client = client
            return true
        }
    }

    /// The feed's thread is done with its connection.
    func detach() { lock.withLock { client = nil } }

    /// The feed's thread: hands `event` over once the exporter has room; false when stopping.
    func emit(_ event: FeedEvent) -> Bool {
        credits.wait()
        guard !isStopping else { return false }
        if case .terminated = continuation.yield(event) { return false }
        return true
    }
}
