import MacroBase
import Tracing

/// Turns run records into spans: one span per run, from its start to its end, named
/// `macro NAME`, with the record's attributes, its console lines and turns as events, and, for a
/// failed run, status error and an `exception` event (docs/observability.md, "OpenTelemetry
/// spans", lists them).
public struct RunSpan: Sendable {
    /// How much of a record a span carries.
    public var bounds: SpanBounds

    /// A writer with `bounds`.
    public init(bounds: SpanBounds = SpanBounds()) {
        self.bounds = bounds
    }

    /// The span's name for a run of `macro`.
    public static func name(of macro: String) -> String { "macro \(macro)" }

    /// Starts and ends the span of `run` on `tracer` (a root span: a run has no parent the
    /// tracer could know).
    public func emit(_ run: MacroRun, to tracer: some Tracer) {
        let span = tracer.startSpan(Self.name(of: run.macro), context: ServiceContext.topLevel, ofKind: .internal, at: run.started)
        span.attributes = attributes(of: run)
        for line in run.console.prefix(bounds.consoleEvents) {
            // A record keeps no time per console line: they are placed at the run's start, in order.
            span.addEvent(SpanEvent(name: "console", at: run.started, attributes: ["console.level": .string(line.level), "console.message": .string(bounds.cut(line.message))]))
        }
        for turn in run.turns.prefix(bounds.turnEvents) {
            span.addEvent(
                SpanEvent(name: "turn", at: run.started.adding(milliseconds: turn.atMs), attributes: ["turn.at_ms": .double(turn.atMs), "turn.ms": .double(turn.ms)]))
        }
        if let failure = run.failure {
            var exception: SpanAttributes = [
                "exception.type": .string(failure.name ?? failure.code),
                "exception.message": .string(bounds.cut(failure.message)),
            ]
            if let stack = failure.stack { exception["exception.stacktrace"] = bounds.cut(stack) }
            span.recordError(RunFailure(failure: failure), attributes: exception, at: run.ended)
            span.setStatus(SpanStatus(code: .error, message: bounds.cut(failure.headline)))
        }
        span.end(at: run.ended)
    }

    /// The span's attributes for `run`.
    public func attributes(of run: MacroRun) -> SpanAttributes {
        var attributes: SpanAttributes = [:]
        attributes["macro.name"] = run.macro
        if let version = run.version { attributes["macro.version"] = version }
        attributes["macro.origin"] = run.origin
        attributes["macro.run.id"] = Int64(run.id)
        attributes["macro.call.id"] = Int64(run.call)
        attributes["macro.arguments"] = bounds.cut(MacroValue.array(run.arguments).jsonText())
        attributes["macro.total_ms"] = run.totalMs
        attributes["macro.javascript_ms"] = run.javascriptMs
        attributes["macro.changes"] = Int64(run.changes)
        attributes["macro.store_changes"] = Int64(run.storeChanges)
        attributes["macro.console.lines"] = Int64(run.console.count + run.consoleDropped)
        attributes["macro.turns"] = Int64(run.turns.count + run.turnsDropped)
        let consoleDropped = run.consoleDropped + max(0, run.console.count - bounds.consoleEvents)
        if consoleDropped > 0 { attributes["macro.console.dropped"] = Int64(consoleDropped) }
        let turnsDropped = run.turnsDropped + max(0, run.turns.count - bounds.turnEvents)
        if turnsDropped > 0 { attributes["macro.turns.dropped"] = Int64(turnsDropped) }
        if let failure = run.failure {
            attributes["macro.error.code"] = failure.code
            if let name = failure.name { attributes["macro.error.name"] = name }
            attributes["macro.error.message"] = bounds.cut(failure.message)
            if let file = failure.file { attributes["macro.error.file"] = file }
            if let line = failure.line { attributes["macro.error.line"] = Int64(line) }
            if let column = failure.column { attributes["macro.error.column"] = Int64(column) }
        } else {
            attributes["macro.result"] = bounds.cut(run.result.jsonText())
        }
        return attributes
    }
}

/// A failed run as the `Error` a span records.
struct RunFailure: Error, CustomStringConvertible {
    var failure: MacroRun.Failure
    var description: String { failure.headline }
}

extension MacroRun.Failure {
    /// `NAME: MESSAGE` (or `CODE: MESSAGE`) and `at FILE:LINE:COLUMN` when known.
    public var headline: String {
        var text = "\(name ?? code): \(message)"
        if let file { text += " at \(file)\(line.map { ":\($0)" } ?? "")\(column.map { ":\($0)" } ?? "")" }
        return text
    }
}
