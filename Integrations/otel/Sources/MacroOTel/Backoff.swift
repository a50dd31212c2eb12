/// The waits between attempts to reach macrod: doubling from `initial` up to `maximum`, back to
/// `initial` once a connection got through.
public struct Backoff: Sendable {
    /// The first wait.
    public var initial: Duration
    /// The longest wait.
    public var maximum: Duration
    private var next: Duration

    /// A backoff from `initial` up to `maximum`.
    public init(initial: Duration = .milliseconds(250), maximum: Duration = .seconds(10)) {
        self.initial = initial
        self.maximum = max(initial, maximum)
        next = initial
    }

    /// The wait before the next attempt (each one twice the one before, at most ``maximum``).
    public mutating func delay() -> Duration {
        let delay = next
        next = min(next * 2, maximum)
        return delay
    }

    /// A connection got through: the next wait is ``initial`` again.
    public mutating func reset() { next = initial }
}
