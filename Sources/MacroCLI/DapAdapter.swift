import Foundation
import MacroBase
import MacroRPC
import Synchronization

/// `macro dap`'s protocol logic: Debug Adapter Protocol requests from the client become
/// macrod's `debug.*` requests, and macrod's `debug.*` notifications become DAP events. One
/// session at a time (a `restart` replaces it); its one thread is the macro (id 1).
final class DapAdapter: Sendable {
    private let framing: DapFraming
    private let defaultSocket: @Sendable (String?) throws -> String
    private let state = Mutex(State())

    /// How the session's end was asked for, which decides what the client is told of it.
    private enum Ending: Sendable {
        /// It ended by itself (or macrod went away): its result or error, `exited`, `terminated`.
        case none
        /// A `terminate` request: as `none`, without calling the cancellation an error.
        case terminate
        /// A `disconnect`: only `terminated` (the client is leaving; nothing failed).
        case disconnect
        /// A `restart`: nothing (the client's session goes on with the next one).
        case restart
    }

    /// What the client set, kept for a `restart` (which starts a new session with them): each
    /// file's breakpoints as sent to macrod, with the ids the client knows them by.
    private struct Remembered: Sendable {
        var path: String
        var breakpoints: [MacroValue]
        var ids: [Int]
    }

    private struct State {
        var link: DapDaemonLink?
        var session: Int?
        /// Bumped when a session's connection is given up (a restart, a failed launch): what that
        /// connection still says is dropped.
        var generation = 0
        var macro = "macro"
        var finished = false
        var ending = Ending.none
        /// Signalled when the session has ended (its end was reported, or dropped for a restart).
        var ended = DispatchSemaphore(value: 0)
        /// The launch's arguments, for a `restart`.
        var launchArguments: MacroValue?
        var configured = false
        /// The files the session loaded (macro files and lib files).
        var files: [String] = []
        /// The exception the session is stopped at: `{id, message, breakMode, stackTrace}`.
        var exception: MacroValue?
        var columnsStartAt1 = true
        var lineBreakpoints: [Remembered] = []
        var functionBreakpoints = Remembered(path: "", breakpoints: [], ids: [])
        /// The last `debug.setExceptionBreakpoints` params (without the session).
        var exceptionFilters: MacroValue?
        /// The client's breakpoint ids by the session's (they stay the same across a restart).
        var clientIDs: [Int: Int] = [:]
        var lastClientID = 0

        /// Fresh client ids for `ids` (the session's), remembered.
        mutating func assign(_ ids: [Int?]) -> [Int] {
            ids.map { id in
                lastClientID += 1
                if let id { clientIDs[id] = lastClientID }
                return lastClientID
            }
        }
    }

    static let threadID = 1

    init(framing: DapFraming, socket: @escaping @Sendable (String?) throws -> String) {
        self.framing = framing
        self.defaultSocket = socket
    }

    /// Reads and answers requests until `disconnect` or the end of input.
    func run() throws {
        while let message = try framing.read() {
            guard message["type"].stringValue == "request" else { continue }
            guard let command = message["command"].stringValue, !command.isEmpty else {
                respond(message, error: "a request without a command")
                continue
            }
            if handle(command, message) { return }
        }
        // The client went away: end the session with it.
        state.withLock { $0.ending = .disconnect }
        terminateAndWait()
    }

    // MARK: Requests

    /// Handles one request; true when the adapter should exit. Every request is answered: one
    /// this adapter does not know fails with its name.
    private func handle(_ command: String, _ request: MacroValue) -> Bool {
        let arguments = request["arguments"]
        switch command {
        case "initialize":
            state.withLock { $0.columnsStartAt1 = arguments["columnsStartAt1"].boolValue ?? true }
            respond(request, body: Self.capabilities)
        case "launch":
            if let error = open(arguments) {
                respond(request, error: error)
            } else {
                respond(request, body: [:])
                event("initialized", [:])
            }
        case "restart":
            restart(request, arguments)
        case "setBreakpoints":
            setBreakpoints(request, arguments)
        case "setFunctionBreakpoints":
            setFunctionBreakpoints(request, arguments)
        case "setExceptionBreakpoints":
            let filters = (arguments["filters"].arrayValue ?? []).compactMap(\.stringValue)
            let params: MacroValue = ["all": .bool(filters.contains("all")), "uncaught": .bool(filters.contains("uncaught"))]
            state.withLock { $0.exceptionFilters = params }
            daemon(request, .debugSetExceptionBreakpoints, params) { _ in [:] }
        case "configurationDone":
            state.withLock { $0.configured = true }
            daemon(request, .debugRun, [:]) { _ in [:] }
        case "threads":
            let name = state.withLock { $0.macro }
            respond(request, body: ["threads": [["id": .number(Double(Self.threadID)), "name": .string(name)]]])
        case "loadedSources":
            let (session, files) = state.withLock { ($0.session, $0.files) }
            if session == nil {
                respond(request, error: "no debug session: launch one first")
            } else {
                respond(request, body: ["sources": .array(files.map { Self.source($0) })])
            }
        case "stackTrace":
            let start = arguments["startFrame"].intValue ?? 0
            let levels = arguments["levels"].intValue ?? 0
            sessionRequest(request, "stackTrace", [:]) { result in
                let frames = result["frames"].arrayValue ?? []
                let window = frames.dropFirst(start).prefix(levels > 0 ? levels : frames.count)
                return [
                    "stackFrames": .array(
                        window.map { f in
                            ["id": f["id"], "name": f["name"], "line": f["line"], "column": f["column"], "source": Self.source(f["file"].stringValue ?? "")]
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
        case "completions":
            completions(request, arguments)
        case "exceptionInfo":
            guard let exception = state.withLock({ $0.exception }) else {
                respond(request, error: "exceptionInfo: the macro is not stopped at an exception")
                break
            }
            respond(
                request,
                body: [
                    "exceptionId": exception["id"], "description": exception["message"], "breakMode": exception["breakMode"],
                    "details": ["message": exception["message"], "typeName": exception["id"], "stackTrace": exception["stackTrace"]],
                ])
        case "setVariable":
            sessionRequest(request, "setVariable", ["ref": arguments["variablesReference"], "name": arguments["name"], "value": arguments["value"]]) { v in
                ["value": v["value"], "type": v["type"], "variablesReference": v["ref"]]
            }
        case "continue", "next", "stepIn", "stepOut":
            state.withLock { $0.exception = nil }
            sessionRequest(request, command, [:]) { _ in command == "continue" ? ["allThreadsContinued": true] : [:] }
        case "pause":
            daemon(request, .debugPause, [:]) { _ in [:] }
        case "terminate":
            state.withLock { if $0.ending == .none { $0.ending = .terminate } }
            daemon(request, .debugTerminate, [:]) { _ in [:] }
        case "disconnect":
            state.withLock { $0.ending = .disconnect }
            terminateAndWait()
            respond(request, body: [:])
            return true
        default:
            respond(request, error: "macro dap does not handle the request '\(command)'")
        }
        return false
    }

    static let capabilities: MacroValue = [
        "supportsConfigurationDoneRequest": true,
        "supportsConditionalBreakpoints": true,
        "supportsHitConditionalBreakpoints": true,
        "supportsLogPoints": true,
        "supportsFunctionBreakpoints": true,
        "supportsEvaluateForHovers": true,
        "supportsSetVariable": true,
        "supportsTerminateRequest": true,
        "supportsRestartRequest": true,
        "supportsExceptionInfoRequest": true,
        "supportsCompletionsRequest": true,
        "completionTriggerCharacters": ["."],
        "supportsLoadedSourcesRequest": true,
        "exceptionBreakpointFilters": [
            ["filter": "uncaught", "label": "Uncaught exceptions", "default": true],
            ["filter": "all", "label": "All exceptions", "default": false],
        ],
    ]

    /// A DAP `Source` for `path`.
    static func source(_ path: String) -> MacroValue {
        ["path": .string(path), "name": .string((path as NSString).lastPathComponent)]
    }

    /// Connects and starts a session for the launch `arguments` (waiting for macrod's answer);
    /// the error's text when it did not start.
    private func open(_ arguments: MacroValue) -> String? {
        let run = arguments["run"]
        guard let macro = arguments["macro"].stringValue ?? (run == .undefined ? nil : "run \(run.jsonText())") else {
            return "launch: \"macro\" (the macro's name), or \"run\" (a run id from `macro runs`, to replay it), is required"
        }
        let generation = state.withLock { $0.generation }
        let link: DapDaemonLink
        do {
            let path = try defaultSocket(arguments["socket"].stringValue)
            link = try DapDaemonLink(
                path: path, onNotification: { [weak self] method, params in self?.notification(method, params, generation: generation) },
                onClose: { [weak self] in self?.daemonClosed(generation: generation) })
        } catch {
            return "launch: \(error)"
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
        switch link.callAndWait(.debugStart, params) {
        case .success(let value):
            state.withLock {
                $0.session = value["session"].intValue
                if let name = value["macro"].stringValue { $0.macro = name }
                $0.files = (value["files"].arrayValue ?? []).compactMap(\.stringValue)
                $0.launchArguments = arguments
            }
            return nil
        case .failure(let error):
            // No session on that connection: it goes, and nothing it says is reported.
            state.withLock {
                $0.generation += 1; $0.link = nil
            }
            link.close()
            return error.message
        }
    }

    /// `restart`: the session ends (quietly), and a new one starts with the launch arguments
    /// (the request's, when it has them), the breakpoints and exception filters set so far, and
    /// runs when the first one had been configured. A client's breakpoint ids stay valid: each
    /// breakpoint's new binding comes as a `breakpoint` event (`changed`).
    private func restart(_ request: MacroValue, _ arguments: MacroValue) {
        guard let previous = state.withLock({ $0.launchArguments }) else {
            return respond(request, error: "restart: nothing was launched yet")
        }
        let given = arguments["arguments"]
        let launch = given["macro"] != .undefined || given["run"] != .undefined ? given : previous
        state.withLock { $0.ending = .restart }
        terminateAndWait()
        let old = state.withLock { state -> DapDaemonLink? in
            defer {
                state.generation += 1
                state.link = nil; state.session = nil; state.finished = false; state.ending = .none
                state.ended = DispatchSemaphore(value: 0)
                state.exception = nil; state.files = []; state.clientIDs = [:]
            }
            return state.link
        }
        old?.close()
        if let error = open(launch) {
            respond(request, error: "restart: \(error)")
            // The client's session has no macro any more: it ends, saying why.
            return finish(["error": ["message": .string(error)]])
        }
        let (link, session, configured) = state.withLock { ($0.link, $0.session, $0.configured) }
        guard let link, let session else { return respond(request, error: "restart: no session") }
        reapply(link, session)
        respond(request, body: [:])
        if configured { link.call(.debugRun, ["session": .number(Double(session))]) { _ in } }
    }

    /// Sets what the client had set on the new session of a restart.
    private func reapply(_ link: DapDaemonLink, _ session: Int) {
        let (lines, functions, exceptions) = state.withLock { ($0.lineBreakpoints, $0.functionBreakpoints, $0.exceptionFilters) }
        let id = MacroValue.number(Double(session))
        for file in lines {
            guard case .success(let result) = link.callAndWait(.debugSetBreakpoints, ["session": id, "path": .string(file.path), "breakpoints": .array(file.breakpoints)])
            else { continue }
            rebind(result, ids: file.ids, path: file.path)
        }
        if !functions.breakpoints.isEmpty,
            case .success(let result) = link.callAndWait(.debugSetFunctionBreakpoints, ["session": id, "breakpoints": .array(functions.breakpoints)])
        {
            rebind(result, ids: functions.ids, path: nil)
        }
        if let exceptions { _ = link.callAndWait(.debugSetExceptionBreakpoints, exceptions.with("session", id)) }
    }

    private func rebind(_ result: MacroValue, ids: [Int], path: String?) {
        for (index, b) in (result["breakpoints"].arrayValue ?? []).enumerated() where index < ids.count {
            state.withLock { state in
                if let id = b["id"].intValue { state.clientIDs[id] = ids[index] }
            }
            event("breakpoint", ["reason": "changed", "breakpoint": Self.breakpoint(b, id: ids[index], path: path ?? b["path"].stringValue)])
        }
    }

    /// A DAP `Breakpoint` from macrod's `{id, verified, line, column?, message?, path?}`.
    static func breakpoint(_ b: MacroValue, id: Int, path: String?) -> MacroValue {
        var entry: MacroValue = ["id": .number(Double(id)), "verified": b["verified"]]
        if let line = b["line"].intValue, line > 0 { entry = entry.with("line", .number(Double(line))) }
        if let path { entry = entry.with("source", source(path)) }
        if b["column"] != .undefined { entry = entry.with("column", b["column"]) }
        if b["message"] != .undefined { entry = entry.with("message", b["message"]) }
        return entry
    }

    private func setBreakpoints(_ request: MacroValue, _ arguments: MacroValue) {
        let path = arguments["source"]["path"].stringValue ?? ""
        let breakpoints = (arguments["breakpoints"].arrayValue ?? []).map { b -> MacroValue in
            var entry: MacroValue = ["line": b["line"]]
            for key in ["column", "condition", "hitCondition", "logMessage"] where b[key] != .undefined {
                entry = entry.with(key, b[key])
            }
            return entry
        }
        daemon(request, .debugSetBreakpoints, ["path": .string(path), "breakpoints": .array(breakpoints)]) { [self] result in
            let answered = result["breakpoints"].arrayValue ?? []
            let ids = state.withLock { state -> [Int] in
                let ids = state.assign(answered.map { $0["id"].intValue })
                let kept = Remembered(path: path, breakpoints: breakpoints, ids: ids)
                if let index = state.lineBreakpoints.firstIndex(where: { $0.path == path }) {
                    state.lineBreakpoints[index] = kept
                } else {
                    state.lineBreakpoints.append(kept)
                }
                return ids
            }
            return ["breakpoints": .array(answered.enumerated().map { Self.breakpoint($1, id: ids[$0], path: path) })]
        }
    }

    private func setFunctionBreakpoints(_ request: MacroValue, _ arguments: MacroValue) {
        let breakpoints = (arguments["breakpoints"].arrayValue ?? []).map { b -> MacroValue in
            var entry: MacroValue = ["name": b["name"]]
            for key in ["condition", "hitCondition"] where b[key] != .undefined {
                entry = entry.with(key, b[key])
            }
            return entry
        }
        daemon(request, .debugSetFunctionBreakpoints, ["breakpoints": .array(breakpoints)]) { [self] result in
            let answered = result["breakpoints"].arrayValue ?? []
            let ids = state.withLock { state -> [Int] in
                let ids = state.assign(answered.map { $0["id"].intValue })
                state.functionBreakpoints = Remembered(path: "", breakpoints: breakpoints, ids: ids)
                return ids
            }
            return ["breakpoints": .array(answered.enumerated().map { Self.breakpoint($1, id: ids[$0], path: $1["path"].stringValue) })]
        }
    }

    /// `completions`: the line of `text` asked for, up to `column`, is completed in the stopped
    /// session (the frame's names, or the properties after a `.`); each target replaces the
    /// word before the cursor (`start`, `length`).
    private func completions(_ request: MacroValue, _ arguments: MacroValue) {
        let base = state.withLock { $0.columnsStartAt1 ? 1 : 0 }
        let lines = (arguments["text"].stringValue ?? "").split(separator: "\n", omittingEmptySubsequences: false)
        let lineIndex = min(max((arguments["line"].intValue ?? base) - base, 0), max(lines.count - 1, 0))
        let line = Array((lines.isEmpty ? "" : lines[lineIndex]).utf16)
        let cursor = min(max((arguments["column"].intValue ?? line.count + base) - base, 0), line.count)
        var args: MacroValue = ["text": .string(String(decoding: line[..<cursor], as: UTF16.self))]
        if arguments["frameId"] != .undefined { args = args.with("frameId", arguments["frameId"]) }
        sessionRequest(request, "completions", args) { result in
            let length = result["length"].intValue ?? 0
            return [
                "targets": .array(
                    (result["targets"].arrayValue ?? []).map { t in
                        ["label": t["label"], "type": t["type"], "start": .number(Double(cursor - length + base)), "length": .number(Double(length))]
                    })
            ]
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

    /// Ends a running session and waits (at most 5 s) for its end.
    private func terminateAndWait() {
        let (link, session, finished, ended) = state.withLock { ($0.link, $0.session, $0.finished, $0.ended) }
        guard let link, let session, !finished else { return }
        link.call(.debugTerminate, ["session": .number(Double(session))]) { _ in }
        _ = ended.wait(timeout: .now() + 5)
    }

    // MARK: Events

    private func notification(_ method: String, _ params: MacroValue, generation: Int) {
        guard state.withLock({ $0.generation == generation }) else { return }
        switch method {
        case RPCNotification.debugStopped.rawValue:
            var body: MacroValue = ["reason": params["reason"], "threadId": .number(Double(Self.threadID)), "allThreadsStopped": true]
            let hit = state.withLock { state -> [MacroValue]? in
                // (`nil` alone would be MacroValue's own literal, `.undefined`.)
                state.exception = params["exception"] == .undefined ? MacroValue?.none : params["exception"]
                return params["hitBreakpointIds"].arrayValue.map { ids in
                    ids.map { id in id.intValue.flatMap { state.clientIDs[$0] }.map { .number(Double($0)) } ?? id }
                }
            }
            if let hit { body = body.with("hitBreakpointIds", .array(hit)) }
            if params["description"] != .undefined { body = body.with("description", params["description"]) }
            if params["text"] != .undefined { body = body.with("text", params["text"]) }
            event("stopped", body)
        case RPCNotification.debugOutput.rawValue:
            var body: MacroValue = ["category": params["category"], "output": params["text"]]
            if let file = params["file"].stringValue {
                body = body.with("source", Self.source(file)).with("line", params["line"]).with("column", params["column"])
            }
            event("output", body)
        case RPCNotification.debugTerminated.rawValue:
            finish(params)
        default:
            break
        }
    }

    private func finish(_ outcome: MacroValue) {
        let (first, ending, ended) = state.withLock { state in
            defer { state.finished = true }
            return (!state.finished, state.ending, state.ended)
        }
        guard first else { return }
        defer { ended.signal() }
        switch ending {
        case .restart: return
        case .disconnect: return event("terminated", [:])
        case .none, .terminate: break
        }
        var summary: String
        if ending == .terminate, outcome["error"]["code"] == "cancelled" {
            summary = "terminated: the macro did not finish"
        } else if let message = outcome["error"]["message"].stringValue {
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
    }

    private func daemonClosed(generation: Int) {
        guard state.withLock({ $0.generation == generation }) else { return }
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
