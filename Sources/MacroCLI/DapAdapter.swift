import Foundation
import MacroBase
import MacroRPC
import Synchronization

/// `macro dap`'s protocol logic: Debug Adapter Protocol requests from the client become
/// macrod's `debug.*` requests, and macrod's `debug.*` notifications become DAP events. One
/// session per adapter; its one thread is the macro (id 1).
final class DapAdapter: Sendable {
    private let framing: DapFraming
    private let defaultSocket: @Sendable (String?) throws -> String
    private let state = Mutex(State())
    /// Signalled when the session has ended (its `terminated` event was sent).
    private let ended = DispatchSemaphore(value: 0)

    private struct State {
        var link: DapDaemonLink?
        var session: Int?
        var macro = "macro"
        var finished = false
    }

    static let threadID = 1

    init(framing: DapFraming, socket: @escaping @Sendable (String?) throws -> String) {
        self.framing = framing
        self.defaultSocket = socket
    }

    /// Reads and answers requests until `disconnect` or the end of input.
    func run() throws {
        while let message = try framing.read() {
            guard message["type"].stringValue == "request", let command = message["command"].stringValue else { continue }
            if handle(command, message) { return }
        }
        // The client went away: end the session with it.
        terminateAndWait()
    }

    // MARK: Requests

    /// Handles one request; true when the adapter should exit.
    private func handle(_ command: String, _ request: MacroValue) -> Bool {
        let arguments = request["arguments"]
        switch command {
        case "initialize":
            respond(request, body: Self.capabilities)
        case "launch":
            launch(request, arguments)
        case "setBreakpoints":
            let path = arguments["source"]["path"].stringValue ?? ""
            let breakpoints = (arguments["breakpoints"].arrayValue ?? []).map { b -> MacroValue in
                var entry: MacroValue = ["line": b["line"]]
                for key in ["column", "condition", "hitCondition", "logMessage"] where b[key] != .undefined {
                    entry = entry.with(key, b[key])
                }
                return entry
            }
            daemon(request, .debugSetBreakpoints, ["path": .string(path), "breakpoints": .array(breakpoints)]) { result in
                .object([
                    "breakpoints": .array(
                        (result["breakpoints"].arrayValue ?? []).map { b in
                            var entry: MacroValue = [
                                "id": b["id"], "verified": b["verified"], "line": b["line"],
                                "source": ["path": .string(path), "name": .string((path as NSString).lastPathComponent)],
                            ]
                            if b["column"] != .undefined { entry = entry.with("column", b["column"]) }
                            if b["message"] != .undefined { entry = entry.with("message", b["message"]) }
                            return entry
                        })
                ])
            }
        case "setExceptionBreakpoints":
            let filters = (arguments["filters"].arrayValue ?? []).compactMap(\.stringValue)
            daemon(request, .debugSetExceptionBreakpoints, ["all": .bool(filters.contains("all")), "uncaught": .bool(filters.contains("uncaught"))]) { _ in [:] }
        case "configurationDone":
            daemon(request, .debugRun, [:]) { _ in [:] }
        case "threads":
            let name = state.withLock { $0.macro }
            respond(request, body: ["threads": [["id": .number(Double(Self.threadID)), "name": .string(name)]]])
        case "stackTrace":
            let start = arguments["startFrame"].intValue ?? 0
            let levels = arguments["levels"].intValue ?? 0
            sessionRequest(request, "stackTrace", [:]) { result in
                let frames = result["frames"].arrayValue ?? []
                let window = frames.dropFirst(start).prefix(levels > 0 ? levels : frames.count)
                return [
                    "stackFrames": .array(
                        window.map { f in
                            let path = f["file"].stringValue ?? ""
                            return [
                                "id": f["id"], "name": f["name"], "line": f["line"], "column": f["column"],
                                "source": ["path": .string(path), "name": .string((path as NSString).lastPathComponent)],
                            ]
                        }), "totalFrames": .number(Double(frames.count)),
                ]
            }
        case "scopes":
            sessionRequest(request, "scopes", ["frameId": arguments["frameId"]]) { result in
                [
                    "scopes": .array(
                        (result["scopes"].arrayValue ?? []).map { s in
                            [
                                "name": s["name"], "variablesReference": s["ref"], "expensive": s["expensive"],
                                "presentationHint": .string(s["name"].stringValue == "Locals" ? "locals" : ""),
                            ]
                        })
                ]
            }
        case "variables":
            sessionRequest(request, "variables", ["ref": arguments["variablesReference"]]) { result in
                [
                    "variables": .array(
                        (result["variables"].arrayValue ?? []).map { v in
                            ["name": v["name"], "value": v["value"], "type": v["type"], "variablesReference": v["ref"]]
                        })
                ]
            }
        case "evaluate":
            var args: MacroValue = ["expression": arguments["expression"]]
            if arguments["frameId"] != .undefined { args = args.with("frameId", arguments["frameId"]) }
            sessionRequest(request, "evaluate", args) { v in
                ["result": v["value"], "type": v["type"], "variablesReference": v["ref"]]
            }
        case "setVariable":
            sessionRequest(request, "setVariable", ["ref": arguments["variablesReference"], "name": arguments["name"], "value": arguments["value"]]) { v in
                ["value": v["value"], "type": v["type"], "variablesReference": v["ref"]]
            }
        case "continue", "next", "stepIn", "stepOut":
            sessionRequest(request, command, [:]) { _ in command == "continue" ? ["allThreadsContinued": true] : [:] }
        case "pause":
            daemon(request, .debugPause, [:]) { _ in [:] }
        case "terminate":
            daemon(request, .debugTerminate, [:]) { _ in [:] }
        case "disconnect":
            terminateAndWait()
            respond(request, body: [:])
            return true
        default:
            respond(request, error: "macro dap does not handle '\(command)'")
        }
        return false
    }

    static let capabilities: MacroValue = [
        "supportsConfigurationDoneRequest": true,
        "supportsConditionalBreakpoints": true,
        "supportsHitConditionalBreakpoints": true,
        "supportsLogPoints": true,
        "supportsEvaluateForHovers": true,
        "supportsSetVariable": true,
        "supportsTerminateRequest": true,
        "exceptionBreakpointFilters": [
            ["filter": "uncaught", "label": "Uncaught exceptions", "default": true],
            ["filter": "all", "label": "All exceptions", "default": false],
        ],
    ]

    private func launch(_ request: MacroValue, _ arguments: MacroValue) {
        let run = arguments["run"]
        guard let macro = arguments["macro"].stringValue ?? (run == .undefined ? nil : "run \(run.jsonText())") else {
            return respond(request, error: "launch: \"macro\" (the macro's name), or \"run\" (a run id from `macro runs`, to replay it), is required")
        }
        let link: DapDaemonLink
        do {
            let path = try defaultSocket(arguments["socket"].stringValue)
            link = try DapDaemonLink(
                path: path, onNotification: { [weak self] method, params in self?.notification(method, params) },
                onClose: { [weak self] in self?.daemonClosed() })
        } catch {
            return respond(request, error: "launch: \(error)")
        }
        state.withLock {
            $0.link = link; $0.macro = macro
        }
        link.startReading()
        var params: MacroValue = [
            "name": .string(macro), "args": arguments["args"] == .undefined ? [] : arguments["args"],
            "stopOnEntry": .bool(arguments["stopOnEntry"].boolValue ?? false),
        ]
        if run != .undefined { params = ["run": run] }
        if arguments["idleTimeoutMs"] != .undefined { params = params.with("idleTimeoutMs", arguments["idleTimeoutMs"]) }
        if arguments["evaluateLimitMs"] != .undefined { params = params.with("evaluateLimitMs", arguments["evaluateLimitMs"]) }
        link.call(.debugStart, params) { [self] result in
            switch result {
            case .success(let value):
                state.withLock {
                    $0.session = value["session"].intValue
                    if let name = value["macro"].stringValue { $0.macro = name }
                }
                respond(request, body: [:])
                event("initialized", [:])
            case .failure(let error):
                respond(request, error: error.message)
            }
        }
    }

    /// Sends `method` with the session's id added to `params`, and answers `request` with
    /// `body(result)` (or the error).
    private func daemon(_ request: MacroValue, _ method: RPCMethod, _ params: MacroValue, body: @escaping @Sendable (MacroValue) -> MacroValue) {
        let (link, session) = state.withLock { ($0.link, $0.session) }
        guard let link, let session else { return respond(request, error: "no debug session: launch one first") }
        link.call(method, params.with("session", .number(Double(session)))) { [self] result in
            switch result {
            case .success(let value): respond(request, body: body(value))
            case .failure(let error): respond(request, error: error.message)
            }
        }
    }

    private func sessionRequest(_ request: MacroValue, _ op: String, _ args: MacroValue, body: @escaping @Sendable (MacroValue) -> MacroValue) {
        daemon(request, .debugRequest, ["op": .string(op), "args": args], body: body)
    }

    /// Ends a running session and waits (at most 5 s) for its `terminated` event.
    private func terminateAndWait() {
        let (link, session, finished) = state.withLock { ($0.link, $0.session, $0.finished) }
        guard let link, let session, !finished else { return }
        link.call(.debugTerminate, ["session": .number(Double(session))]) { _ in }
        _ = ended.wait(timeout: .now() + 5)
    }

    // MARK: Events

    private func notification(_ method: String, _ params: MacroValue) {
        switch method {
        case RPCNotification.debugStopped.rawValue:
            var body: MacroValue = ["reason": params["reason"], "threadId": .number(Double(Self.threadID)), "allThreadsStopped": true]
            if params["hitBreakpointIds"] != .undefined { body = body.with("hitBreakpointIds", params["hitBreakpointIds"]) }
            if params["description"] != .undefined { body = body.with("description", params["description"]) }
            if params["text"] != .undefined { body = body.with("text", params["text"]) }
            event("stopped", body)
        case RPCNotification.debugOutput.rawValue:
            var body: MacroValue = ["category": params["category"], "output": params["text"]]
            if let file = params["file"].stringValue {
                body = body.with("source", ["path": .string(file), "name": .string((file as NSString).lastPathComponent)])
                    .with("line", params["line"]).with("column", params["column"])
            }
            event("output", body)
        case RPCNotification.debugTerminated.rawValue:
            finish(params)
        default:
            break
        }
    }

    private func finish(_ outcome: MacroValue) {
        let first = state.withLock { state -> Bool in
            defer { state.finished = true }
            return !state.finished
        }
        guard first else { return }
        var summary: String
        if let message = outcome["error"]["message"].stringValue {
            summary = "error: \(message)"
        } else {
            summary = "result: \(outcome["result"] == .undefined ? "undefined" : outcome["result"].jsonText(pretty: false))"
        }
        for change in outcome["changes"].arrayValue ?? [] {
            summary +=
                "\n\(change["channel"].stringValue ?? "?") \(change["from"].jsonText(pretty: false)) -> \(change["to"].jsonText(pretty: false)) (not applied: a debug session works on a copy)"
        }
        event("output", ["category": "console", "output": .string(summary + "\n")])
        event("exited", ["exitCode": .number(outcome["error"] == .undefined ? 0 : 1)])
        event("terminated", [:])
        ended.signal()
    }

    private func daemonClosed() {
        finish(["error": ["message": "macrod closed the connection"]])
    }

    // MARK: Output

    private func respond(_ request: MacroValue, body: MacroValue) {
        framing.send(["type": "response", "request_seq": request["seq"], "command": request["command"], "success": true, "body": body])
    }

    private func respond(_ request: MacroValue, error: String) {
        framing.send([
            "type": "response", "request_seq": request["seq"], "command": request["command"], "success": false,
            "message": .string(error), "body": ["error": ["id": 1, "format": .string(error)]],
        ])
    }

    private func event(_ name: String, _ body: MacroValue) {
        framing.send(["type": "event", "event": .string(name), "body": body])
    }
}

extension MacroValue {
    /// This object with `key` set to `value`.
    func with(_ key: String, _ value: MacroValue) -> MacroValue {
        guard case .object(var fields) = self else { return self }
        fields[key] = value
        return .object(fields)
    }
}
