import Foundation
import Logging
import OrderedCollections
import Synchronization

/// One debug session served in a process of its own (`macrod --debug-worker`), so that whatever
/// the debugged code does (a promise chain no hook sees, a heap that grows without bound, a fault
/// in JavaScriptCore) ends with that process, never with macrod: the daemon kills it at the
/// session's memory cap or running-time limit, and when the session or its connection ends.
///
/// The protocol is one JSON text per line. macrod writes the launch first, `{"launch": OPTIONS}`
/// (``DebugSession/Options/json``), then requests `{"id", "op", ...}`: `setBreakpoints {path,
/// breakpoints}`, `setFunctionBreakpoints {breakpoints}`, `setExceptionBreakpoints {all, uncaught}`, `run`, `pause`, `terminate`, and
/// `request {request, args}`. The worker answers the launch with `{"launched": {files,
/// skipped}}` or `{"failed": MESSAGE}`, each request with `{"id", "result"}` or `{"id", "error":
/// {code, message}}`, and writes the session's events as `{"event": stopped|output|terminated,
/// "body"}`. It exits after `terminated`, and when its input ends (macrod went away).
public enum DebugWorker {
    /// Serves one session on standard input and output, then exits the process.
    public static func serve(logger: Logger) -> Never {
        let out = LineWriter(fd: 1)
        var input = LineReader(fd: 0)
        guard let first = input.next(), let launch = try? JSONParser.parse(first), launch["launch"] != .undefined,
            let options = DebugSession.Options(json: launch["launch"])
        else {
            out.write(["failed": "the debug worker needs a launch line first"])
            exit(2)
        }
        let session: DebugSession
        do {
            session = try DebugSession(options: options, logger: logger) { event in
                out.write(event.line)
                if case .terminated = event { _exit(0) }
            }
        } catch {
            out.write(["failed": .string((error as? DebugError)?.message ?? "\(error)")])
            exit(0)
        }
        out.write([
            "launched": [
                "files": .array(session.map.files.map { .string($0) }),
                "skipped": .array(session.skipped.map { ["file": .string($0.path), "message": .string($0.message)] }),
            ]
        ])
        while let line = input.next() {
            guard let request = try? JSONParser.parse(line), let id = request["id"].intValue else { continue }
            let reply: @Sendable (Result<MacroValue, DebugError>) -> Void = { result in
                switch result {
                case .success(let value): out.write(["id": .number(Double(id)), "result": value])
                case .failure(let error):
                    out.write(["id": .number(Double(id)), "error": ["code": .string(error.code.rawValue), "message": .string(error.message)]])
                }
            }
            handle(request, session: session, reply: reply)
        }
        // macrod closed the pipe: end the session; a session that cannot end (stuck where no hook
        // runs) goes with the process a moment later.
        session.terminate()
        Thread.sleep(forTimeInterval: 1)
        exit(0)
    }

    private static func handle(_ request: MacroValue, session: DebugSession, reply: @escaping @Sendable (Result<MacroValue, DebugError>) -> Void) {
        switch request["op"].stringValue ?? "" {
        case "setBreakpoints":
            let requests = (request["breakpoints"].arrayValue ?? []).map { b in
                DebugSession.BreakpointRequest(
                    line: b["line"].intValue ?? 0, column: b["column"].intValue, condition: b["condition"].stringValue,
                    hitCondition: b["hitCondition"].stringValue, logMessage: b["logMessage"].stringValue)
            }
            let set = session.setBreakpoints(path: request["path"].stringValue ?? "", requests)
            reply(.success(["breakpoints": .array(set.map(\.json))]))
        case "setFunctionBreakpoints":
            let requests = (request["breakpoints"].arrayValue ?? []).map { b in
                DebugSession.FunctionBreakpointRequest(name: b["name"].stringValue ?? "", condition: b["condition"].stringValue, hitCondition: b["hitCondition"].stringValue)
            }
            reply(.success(["breakpoints": .array(session.setFunctionBreakpoints(requests).map(\.json))]))
        case "setExceptionBreakpoints":
            session.setExceptionBreakpoints(all: request["all"].boolValue ?? false, uncaught: request["uncaught"].boolValue ?? false)
            reply(.success([:]))
        case "run":
            session.start()
            reply(.success([:]))
        case "pause":
            session.pause()
            reply(.success([:]))
        case "terminate":
            session.terminate()
            reply(.success([:]))
        case "request":
            let arguments = request["args"] == .undefined ? [:] : request["args"]
            session.request(request["request"].stringValue ?? "", arguments, reply: reply)
        case let op:
            reply(.failure(DebugError(.invalidRequest, "unknown debug worker operation '\(op)'")))
        }
    }
}

/// Lines from a file descriptor, read with read(2) (retried on EINTR: JavaScriptCore's
/// collector signals threads, and stdio's readLine spun on the interrupted read).
struct LineReader {
    private let fd: Int32
    private var buffer: [UInt8] = []
    private var ended = false

    init(fd: Int32) { self.fd = fd }

    /// The next line without its newline; nil at the end of input.
    mutating func next() -> String? {
        while true {
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffer[..<newline], as: UTF8.self)
                buffer.removeSubrange(...newline)
                return line
            }
            if ended {
                guard !buffer.isEmpty else { return nil }
                defer { buffer = [] }
                return String(decoding: buffer, as: UTF8.self)
            }
            var chunk = [UInt8](repeating: 0, count: 65_536)
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0, errno == EINTR { continue }
            if n <= 0 { ended = true } else { buffer += chunk[..<n] }
        }
    }
}

/// Whole lines to a file descriptor, one writer at a time (events come from the session's
/// thread, replies from the reader's).
final class LineWriter: Sendable {
    private let fd: Int32
    private let lock = Mutex(())

    init(fd: Int32) { self.fd = fd }

    func write(_ value: MacroValue) {
        let bytes = Array((value.jsonText(pretty: false) + "\n").utf8)
        lock.withLock { _ in
            var offset = 0
            while offset < bytes.count {
                let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, bytes.count - offset) }
                if n < 0, errno == EINTR { continue }
                guard n > 0 else { return }
                offset += n
            }
        }
    }
}

extension DebugEvent {
    /// The worker's line for this event: `{"event", "body"}`, the body as the `debug.*`
    /// notification's params carry it (without `session`, which macrod adds).
    var line: MacroValue {
        switch self {
        case .stopped(let body): return ["event": "stopped", "body": body]
        case .output(let output):
            var body: MacroValue = ["category": .string(output.category), "text": .string(output.text)]
            if let file = output.file { body = body.setting("file", .string(file)) }
            if let line = output.line { body = body.setting("line", .number(Double(line))) }
            if let column = output.column { body = body.setting("column", .number(Double(column))) }
            return ["event": "output", "body": body]
        case .terminated(let outcome): return ["event": "terminated", "body": outcome.json]
        }
    }
}

extension DebugSession.Breakpoint {
    /// As `debug.setBreakpoints` answers it: `{id, verified, line, column?, message?}` (and a
    /// function breakpoint's `path`).
    var json: MacroValue {
        var value: MacroValue = ["id": .number(Double(id)), "verified": .bool(verified), "line": .number(Double(line))]
        if let column { value = value.setting("column", .number(Double(column))) }
        if let message { value = value.setting("message", .string(message)) }
        if let path { value = value.setting("path", .string(path)) }
        return value
    }
}

extension DebugSession.Options {
    /// The options as the worker's launch line carries them.
    public var json: MacroValue {
        var value: MacroValue = [
            "macro": .string(macro), "arguments": .array(arguments), "directory": .string(directory), "stopOnEntry": .bool(stopOnEntry),
            "timeLimitNs": .number(Double(timeLimit.nanoseconds)), "callDeadlineNs": .number(Double(callDeadline.nanoseconds)),
            "hardenBuiltins": .bool(hardenBuiltins), "idleTimeoutNs": .number(Double(idleTimeout.nanoseconds)), "evalEnabled": .bool(evalEnabled),
            "evaluateLimitNs": .number(Double(evaluateLimit.nanoseconds)),
            "channels": .array(
                channels.map {
                    ["name": .string($0.name), "minimum": .number($0.minimum), "maximum": .number($0.maximum), "initial": .number($0.initial)]
                }),
            "values": .object(OrderedDictionary(uniqueKeysWithValues: values.sorted { $0.key < $1.key }.map { ($0.key, MacroValue.number($0.value)) })),
            "quarantine": .string((try? String(decoding: JSONEncoder().encode(quarantine), as: UTF8.self)) ?? "{}"),
        ]
        if let memoryLimit { value = value.setting("memoryLimit", .number(Double(memoryLimit))) }
        if stopAtThrow { value = value.setting("stopAtThrow", true) }
        if !store.isEmpty {
            value = value.setting("store", .object(OrderedDictionary(uniqueKeysWithValues: store.sorted { $0.key < $1.key }.map { ($0.key, MacroValue.string($0.value)) })))
        }
        return value
    }

    /// Options read back from ``json``; nil when a required field is missing.
    public init?(json: MacroValue) {
        guard let macro = json["macro"].stringValue, let directory = json["directory"].stringValue else { return nil }
        func duration(_ key: String) -> Duration? { json[key].doubleValue.flatMap { Int64(exactly: $0) }.map { .nanoseconds($0) } }
        self.init(macro: macro, arguments: json["arguments"].arrayValue ?? [], directory: directory, stopOnEntry: json["stopOnEntry"].boolValue ?? false)
        timeLimit = duration("timeLimitNs") ?? timeLimit
        callDeadline = duration("callDeadlineNs") ?? callDeadline
        idleTimeout = duration("idleTimeoutNs") ?? idleTimeout
        evaluateLimit = duration("evaluateLimitNs") ?? evaluateLimit
        memoryLimit = json["memoryLimit"].intValue
        hardenBuiltins = json["hardenBuiltins"].boolValue ?? true
        evalEnabled = json["evalEnabled"].boolValue ?? false
        if let channels = json["channels"].arrayValue {
            self.channels = channels.compactMap { c in
                c["name"].stringValue.map {
                    ProgressChannel(name: $0, minimum: c["minimum"].doubleValue ?? 0, maximum: c["maximum"].doubleValue ?? 10, initial: c["initial"].doubleValue ?? 0)
                }
            }
        }
        if let values = json["values"].objectValue {
            self.values = Dictionary(values.compactMap { key, value in value.doubleValue.map { (key, $0) } }, uniquingKeysWith: { $1 })
        }
        stopAtThrow = json["stopAtThrow"].boolValue ?? false
        if let store = json["store"].objectValue {
            self.store = Dictionary(uniqueKeysWithValues: store.compactMap { key, value in value.stringValue.map { (key, $0) } })
        }
        if let text = json["quarantine"].stringValue, let list = try? JSONDecoder().decode(Quarantine.self, from: Data(text.utf8)) {
            quarantine = list
        }
    }
}
