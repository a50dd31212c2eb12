import Dispatch
import Logging
import MacroEngineCore
import MacroTestSupport
import Synchronization
import Testing

/// Records log entries so tests can check what the default exception handler reports.
final class RecordingLogHandler: LogHandler, Sendable {
    struct Entry: Sendable {
        var level: Logger.Level
        var message: String
        var metadata: [String: String]
    }
    let entries = Mutex<[Entry]>([])
    var metadata: Logger.Metadata {
        get { [:] }
        set {}
    }
    var logLevel: Logger.Level {
        get { .trace }
        set {}
    }
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { nil }
        set {}
    }
    func log(event: LogEvent) {
        let flat = (event.metadata ?? [:]).mapValues { "\($0)" }
        entries.locked { $0.append(Entry(level: event.level, message: "\(event.message)", metadata: flat)) }
    }
}

/// Counts deinitialisations of objects captured by native closures, and signals each one.
final class Tracker: Sendable {
    static let released = Atomic<Int>(0)
    static let releases = DispatchSemaphore(value: 0)
    deinit {
        Self.released.add(1, ordering: .relaxed)
        Self.releases.signal()
    }
}

@Suite("Engine lifecycle and reporting")
struct LifecycleTests {
    @Test func defaultExceptionHandlerLogsEveryFieldAsMetadata() throws {
        let handler = RecordingLogHandler()
        let engine = MacroEngine(logger: Logger(label: "t") { _ in handler })
        _ = try? engine.setMethod(javascript: "function() {\n  throw new TypeError('bad')\n}", key: "failing", file: "/m/failing.js")
        #expect(throws: MacroError.self) { try engine.call("failing") }
        let entries = handler.entries.locked { $0 }
        #expect(entries.count == 1)
        let entry = try #require(entries.first)
        #expect(entry.level == .error)
        #expect(entry.message == "TypeError: bad")
        #expect(
            entry.metadata == [
                "code": "threw", "error.name": "TypeError", "macro": "failing", "file": "/m/failing.js",
                "line": "2", "column": "22", "stack": "failing@/m/failing.js:2:22",
            ])
    }

    @Test func closuresAreReleasedWhenTheEngineGoes() throws {
        let before = Tracker.released.load(ordering: .relaxed)
        do {
            let engine = MacroEngine(logger: silentLogger)
            try engine.add(ProgressModel())  // its closures must not keep the engine alive
            try engine.register("typed") { (x: Double) in _ = x }
            for i in 0..<50 {
                let tracker = Tracker()
                try engine.register(
                    "f\(i)",
                    values: { _ in
                        _ = tracker; return .null
                    })
            }
            // Re-registering a name releases the closure it replaces at once.
            try engine.register("f0", values: { _ in .null })
            #expect(Tracker.released.load(ordering: .relaxed) - before == 1)
        }
        // The rest go when the context is destroyed (finalizers run on the engine's thread): each
        // release is signalled, the 50 waited for (2 s at most for all).
        let deadline = DispatchTime.now() + 2
        for _ in 0..<50 where Tracker.releases.wait(timeout: deadline) == .success {}
        #expect(Tracker.released.load(ordering: .relaxed) - before == 50)
    }
}
