/// One channel of the progress model: a named value clamped to `minimum...maximum`.
public struct ProgressChannel: Sendable, Hashable, Codable {
    /// The channel's name (`inner`); also names its JS functions (`setInnerProgress`).
    public var name: String
    /// The lowest value (0 for the default rings).
    public var minimum: Double
    /// The highest value (10 for the default rings).
    public var maximum: Double
    /// The value before anything is set or restored.
    public var initial: Double

    /// Creates a channel.
    public init(name: String, minimum: Double = 0, maximum: Double = 10, initial: Double = 0) {
        self.name = name
        self.minimum = minimum
        self.maximum = maximum
        self.initial = initial
    }

    /// The default channels, three rings: inner, middle, outer, each 0...10 starting at 0.
    public static let rings: [ProgressChannel] = [
        ProgressChannel(name: "inner"), ProgressChannel(name: "middle"), ProgressChannel(name: "outer"),
    ]

    /// Clamps `value` into the channel's range.
    public func clamp(_ value: Double) -> Double { min(maximum, max(minimum, value)) }
}
