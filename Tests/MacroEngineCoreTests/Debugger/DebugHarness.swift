import Foundation
import Logging
import MacroEngineCore
import MacroTestSupport

/// A debug session on a temporary macros directory, with its events as a stream the test reads
/// in order (each `stopped` awaited, never slept for).
final class DebugHarness {
    let directory = TemporaryDirectory(prefix: "macro-debug")
    var session: DebugSession!
    private var iterator: AsyncStream<DebugEvent>.Iterator!
    /// Output seen so far (read while waiting for other events).
    private(set) var output: [DebugOutput] = []

    /// The demo files of these tests: a lib helper, an async helper, and macros using them.
    static let files: [String: String] = DebugFixtures.files.merging([
        "pump.js": """
        async function pump() {
            let n = 0;
            while (true) {
                n++;
                await null;
            }
        }
        """,
        "spin.js": """
        function spin() {
            let n = 0;
            console.log("spinning");
            while (true) {
                n++;
            }
        }
        """,
        "counter.js": """
        function counter() {
            let count = 0;
            const add = (step) => {
                count += step;
                return count;
            };
            add(2);
            return add(3);
        }
        """,
        "bare.js": """
        // A macro in the bare form: its frames are named after the file.
        (step) => {
            return step + 1;
        }
        """,
        "anonymous.js": """
        function (a, b) { return a * b; };
        """,
        "logs.js": """
        function logs() {
            console.log("hello", 1);
            return { a: 1, list: [1, 2, 3], nested: { deep: true } };
        }
        """,
    ]) { _, own in own }

    init() throws {
        for (path, text) in Self.files { try directory.write(path, text) }
    }

    func path(_ relative: String) -> String { root + "/" + relative }

    func launch(
        _ macro: String, _ arguments: [MacroValue] = [], stopOnEntry: Bool = false,
        configure: (inout DebugSession.Options) -> Void = { _ in }
    ) throws {
        var options = DebugSession.Options(macro: macro, arguments: arguments, directory: directory.path, stopOnEntry: stopOnEntry)
        configure(&options)
        let (stream, continuation) = AsyncStream<DebugEvent>.makeStream()
        var logger = Logger(label: "debug-test")
        logger.logLevel = .critical
        session = try DebugSession(options: options, logger: logger) { continuation.yield($0) }
        iterator = stream.makeAsyncIterator()
    }

    /// The next `stopped` event's body (fails the test on `terminated`).
    func nextStop() async throws -> MacroValue {
        while let event = await iterator.next() {
            switch event {
            case .stopped(let body): return body
            case .output(let text): output.append(text)
            case .terminated(let outcome): throw HarnessError(message: "terminated instead of stopping: \(outcome.json.jsonText())")
            }
        }
        throw HarnessError(message: "no more events")
    }

    /// The next output (fails on any other event).
    func nextOutput() async throws -> DebugOutput {
        guard let event = await iterator.next() else { throw HarnessError(message: "no more events") }
        guard case .output(let text) = event else { throw HarnessError(message: "\(event) instead of output") }
        return text
    }

    /// Waits for the end of the session (fails on a `stopped` event).
    func outcome() async throws -> DebugOutcome {
        while let event = await iterator.next() {
            switch event {
            case .stopped(let body): throw HarnessError(message: "stopped instead of ending: \(body.jsonText())")
            case .output(let text): output.append(text)
            case .terminated(let outcome): return outcome
            }
        }
        throw HarnessError(message: "no more events")
    }

    /// The directory as the session names its files.
    var root: String { URL(fileURLWithPath: directory.path).standardizedFileURL.resolvingSymlinksInPath().path }

    /// `FILE:LINE:COLUMN REASON` of a stop or frame, FILE relative to the directory.
    func position(_ stop: MacroValue) -> String {
        let file = (stop["file"].stringValue ?? "?").replacingOccurrences(of: root + "/", with: "")
        let reason = stop["reason"].stringValue.map { " " + $0 } ?? ""
        return "\(file):\(stop["line"].intValue ?? 0):\(stop["column"].intValue ?? 0)\(reason)"
    }

    /// The variables of `ref` as `name: value` text.
    func variables(_ ref: MacroValue) async throws -> [String: String] {
        let answer = try await session.request("variables", ["ref": ref])
        var out: [String: String] = [:]
        for variable in answer["variables"].arrayValue ?? [] {
            out[variable["name"].stringValue ?? ""] = variable["value"].stringValue ?? ""
        }
        return out
    }

    /// The `Locals` scope's reference of frame `frameId`.
    func localsRef(frame frameId: MacroValue) async throws -> MacroValue {
        let scopes = try await session.request("scopes", ["frameId": frameId])
        return scopes["scopes"][0]["ref"]
    }
}

struct HarnessError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}
