/// How much of a run record one span carries: a record may hold 64 KiB of result, 200 console
/// lines of 256 KiB in all and 200 turns; collectors and backends limit attribute and event sizes
/// far below that.
public struct SpanBounds: Sendable, Equatable {
    /// The most bytes of one attribute's text (arguments, result, message, stack, a console
    /// line); longer text is cut at a character boundary with `…[cut: N bytes]`.
    public var attributeBytes: Int
    /// The most console events; the lines past them are counted in `macro.console.dropped`.
    public var consoleEvents: Int
    /// The most turn events; the turns past them are counted in `macro.turns.dropped`.
    public var turnEvents: Int

    /// Bounds; the defaults are `macro-otel`'s.
    public init(attributeBytes: Int = 4096, consoleEvents: Int = 100, turnEvents: Int = 100) {
        self.attributeBytes = attributeBytes
        self.consoleEvents = consoleEvents
        self.turnEvents = turnEvents
    }

    /// `text` when it fits in ``attributeBytes``, else its first bytes (whole characters) and a
    /// note of how many bytes were cut.
    public func cut(_ text: String) -> String {
        let count = text.utf8.count
        guard count > attributeBytes else { return text }
        var kept = ""
        var bytes = 0
        for character in text {
            let size = character.utf8.count
            if bytes + size > attributeBytes { break }
            kept.append(character)
            bytes += size
        }
        return kept + "…[cut: \(count - bytes) bytes]"
    }
}
