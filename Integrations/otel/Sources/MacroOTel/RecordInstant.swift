import Tracing

/// A point in time taken from a run record (its start, its end, a turn), not from a clock: the
/// span of a run exported later still carries the run's own times.
public struct RecordInstant: TracerInstant {
    /// Nanoseconds since 1970-01-01 00:00:00 UTC.
    public var nanosecondsSinceEpoch: UInt64

    /// The instant `nanosecondsSinceEpoch` nanoseconds after the epoch.
    public init(nanosecondsSinceEpoch: UInt64) {
        self.nanosecondsSinceEpoch = nanosecondsSinceEpoch
    }

    /// The instant `milliseconds` (fractions kept to the nanosecond) after this one.
    public func adding(milliseconds: Double) -> RecordInstant {
        guard milliseconds.isFinite, milliseconds > 0 else { return self }
        return RecordInstant(nanosecondsSinceEpoch: nanosecondsSinceEpoch &+ UInt64((milliseconds * 1_000_000).rounded()))
    }

    /// Earlier first.
    public static func < (lhs: RecordInstant, rhs: RecordInstant) -> Bool {
        lhs.nanosecondsSinceEpoch < rhs.nanosecondsSinceEpoch
    }
}
