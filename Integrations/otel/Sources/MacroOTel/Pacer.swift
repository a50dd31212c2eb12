/// Keeps the spans handed to the tracer within what swift-otel's batch processor exports: it
/// sends one batch (`OTEL_BSP_MAX_EXPORT_BATCH_SIZE`) per tick (`OTEL_BSP_SCHEDULE_DELAY`) and
/// drops spans past its queue (`OTEL_BSP_MAX_QUEUE_SIZE`), so a catch-up of thousands of kept
/// runs would lose most of them. At most `batch` spans go out per `window`; the rest wait.
public struct Pacer: Sendable {
    /// Spans per window.
    public var batch: Int
    /// The window.
    public var window: Duration
    private var windowStart: ContinuousClock.Instant?
    private var sent = 0

    /// A pacer letting `batch` spans through per `window`.
    public init(batch: Int, window: Duration) {
        self.batch = max(1, batch)
        self.window = window
    }

    /// Waits, when this window's spans are spent, for the next window.
    public mutating func admit() async {
        let now = ContinuousClock.now
        if let start = windowStart, now - start < window {
            if sent >= batch {
                try? await Task.sleep(until: start + window, clock: .continuous)
                windowStart = ContinuousClock.now
                sent = 0
            }
        } else {
            windowStart = now
            sent = 0
        }
        sent += 1
    }
}
