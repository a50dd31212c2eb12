import InMemoryTracing
import MacroBase
import MacroOTel
import Testing
import Tracing

/// A record as `run.get` answers it, and the span macro-otel makes of it.
@Suite struct RunSpanTests {
    static let failed = """
        {"id":7,"call":3,"macro":"boom","version":"a1b2c3d4e5f60718","origin":"socket","started":"2026-11-22T08:50:39.526Z",
         "arguments":[1,"two"],"error":{"code":"threw","name":"TypeError","message":"bad","file":"/m/boom.js","line":2,"column":9,"stack":"boom@/m/boom.js:2:9"},
         "console":[{"level":"log","message":"hello"},{"level":"warn","message":"careful"}],"consoleDropped":0,
         "changes":[{"channel":"inner","from":0,"to":1,"kept":false}],"storeChanges":[],"valuesBefore":{"inner":0},"storeBefore":null,
         "timings":{"totalMs":12.5,"javascriptMs":1.25,"turns":[{"atMs":0,"ms":1},{"atMs":10,"ms":0.25}]}}
        """

    @Test func decodesTheRecord() throws {
        let run = try MacroRun(json: MacroValue(jsonText: Self.failed))
        #expect(run.id == 7 && run.call == 3 && run.macro == "boom" && run.origin == "socket")
        #expect(run.started.nanosecondsSinceEpoch == 1_795_337_439_526_000_000)
        #expect(run.ended.nanosecondsSinceEpoch == 1_795_337_439_538_500_000)
        #expect(run.failure?.headline == "TypeError: bad at /m/boom.js:2:9")
        #expect(run.console.count == 2 && run.changes == 1 && run.turns.count == 2)
    }

    @Test func malformedRecordsNameTheField() throws {
        #expect(throws: ExportError.self) { try MacroRun(json: MacroValue(jsonText: #"{"id":1,"macro":"x","origin":"socket","started":"yesterday","timings":{"totalMs":1}}"#)) }
        let unfinished = try MacroValue(jsonText: #"{"id":1,"macro":"x","origin":"socket","started":"2026-11-22T08:50:39.526Z","timings":{}}"#)
        do {
            _ = try MacroRun(json: unfinished)
            Issue.record("a record without totalMs was read")
        } catch {
            #expect(error.code == .malformedReply && error.message.contains("timings.totalMs"))
        }
    }

    @Test func aFailedRunIsAnErrorSpanWithItsEvents() throws {
        let tracer = InMemoryTracer()
        let run = try MacroRun(json: MacroValue(jsonText: Self.failed))
        RunSpan().emit(run, to: tracer)
        let span = try #require(tracer.finishedSpans.first)
        #expect(span.operationName == "macro boom")
        #expect(span.startInstant.nanosecondsSinceEpoch == run.started.nanosecondsSinceEpoch)
        #expect(span.endInstant.nanosecondsSinceEpoch == run.ended.nanosecondsSinceEpoch)
        #expect(span.status?.code == .error)
        #expect(span.attributes["macro.error.code"]?.toSpanAttribute() == .string("threw"))
        #expect(span.attributes["macro.error.line"]?.toSpanAttribute() == .int64(2))
        #expect(span.attributes["macro.arguments"]?.toSpanAttribute() == .string(#"[1,"two"]"#))
        #expect(span.attributes["macro.result"] == nil)
        #expect(span.events.filter { $0.name == "console" }.count == 2)
        #expect(span.events.filter { $0.name == "turn" }.map(\.nanosecondsSinceEpoch) == [run.started.nanosecondsSinceEpoch, run.started.nanosecondsSinceEpoch + 10_000_000])
        #expect(span.errors.count == 1)
    }

    @Test func longTextsAndManyEventsAreBounded() throws {
        var json = try MacroValue(jsonText: Self.failed)
        guard case .object(var fields) = json else { return }
        fields["error"] = nil
        fields["result"] = .string(String(repeating: "é", count: 10_000))
        fields["console"] = .array((0..<300).map { ["level": "log", "message": .string("line \($0)")] })
        json = .object(fields)
        let tracer = InMemoryTracer()
        RunSpan(bounds: SpanBounds(attributeBytes: 100, consoleEvents: 10, turnEvents: 1)).emit(try MacroRun(json: json), to: tracer)
        let span = try #require(tracer.finishedSpans.first)
        guard case .string(let result) = span.attributes["macro.result"]?.toSpanAttribute() else { Issue.record("no result"); return }
        #expect(result.hasPrefix("\"éé") && result.hasSuffix("…[cut: 19903 bytes]"))
        #expect(span.events.filter { $0.name == "console" }.count == 10)
        #expect(span.attributes["macro.console.dropped"]?.toSpanAttribute() == .int64(290))
        #expect(span.attributes["macro.turns.dropped"]?.toSpanAttribute() == .int64(1))
        #expect(span.status == nil)
    }

    @Test func timestampsRoundTrip() {
        let instant = Timestamp.parse("2026-11-22T08:50:39.526Z")!
        #expect(Timestamp.format(instant) == "2026-11-22T08:50:39.526Z")
        #expect(Timestamp.parse(Timestamp.format(instant.adding(milliseconds: 0.000123), digits: 9)) == instant.adding(milliseconds: 0.000123))
        #expect(Timestamp.parse("2026-11-22 08:50:39Z") == nil)
    }
}
