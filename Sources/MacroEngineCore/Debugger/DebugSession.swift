import Foundation
import Logging
import NIOCore
import Synchronization

/// One debug session: a macro run step by step, in an engine of its own.
///
/// The session's ``MacroEngine`` has its own context group and its own thread, a copy of the
/// progress model taken at launch (nothing it writes reaches the live values), and the macro
/// and lib files instrumented by ``Instrumenter``: a hook before every statement of every
/// function. A stop blocks the session's thread inside a hook until a client resumes it, so
/// the daemon's engine and its other clients never wait for a session. Time stopped is not
/// counted against the time limit (the watchdog's deadline moves by it) nor against the call
/// deadline (enforced here on the session's running time only). A session left stopped for
/// ``Options/idleTimeout`` ends.
///
/// Every method may be called from any thread; events arrive on the session's thread.
public final class DebugSession: Sendable {
    /// How to launch a session.
    public struct Options: Sendable {
        /// The macro to run and its arguments.
        public var macro: String
        /// The arguments it is called with.
        public var arguments: [MacroValue]
        /// The macros directory (`NAME.js`, `lib/*.js`).
        public var directory: String
        /// Stop before the macro's first statement.
        public var stopOnEntry: Bool
        /// The engine settings of the live engine: the time limit per synchronous run, the call
        /// deadline (counted over running time only), memory, hardened built-ins.
        public var timeLimit: Duration
        /// The call's deadline, counted over running time only.
        public var callDeadline: Duration
        /// The JavaScript heap's limit in bytes (nil: none).
        public var memoryLimit: Int?
        /// Whether the built-ins are frozen, as in the live engine.
        public var hardenBuiltins: Bool
        /// The progress channels and their values when the session starts.
        public var channels: [ProgressChannel]
        /// The channels' values at launch, by name (the session's copy).
        public var values: [String: Double]
        /// The macro's store at launch, key: JSON text (the session's copy; nothing it writes
        /// reaches the live store).
        public var store: [String: String] = [:]
        /// A replay of a run that failed: the session stops at the throw (uncaught exceptions
        /// stop it whatever the client sets).
        public var stopAtThrow = false
        /// A session stopped this long without a request ends.
        public var idleTimeout: Duration
        /// Whether the macro's own code may use `eval` and `new Function`, as in the live engine
        /// (`allow_eval`); the debugger's own evaluations may always.
        public var evalEnabled: Bool
        /// The live engine's quarantine: a file it holds with the same content is not loaded.
        public var quarantine: Quarantine
        /// How long one request to a stopped session (an `evaluate`, `variables` reading getters,
        /// a `setVariable`) may run: past it, that request fails and the session stays stopped.
        /// Not counted against ``timeLimit`` or ``callDeadline`` (the session is stopped).
        public var evaluateLimit: Duration

        /// Creates options with the engine's defaults.
        public init(
            macro: String, arguments: [MacroValue] = [], directory: String, stopOnEntry: Bool = false,
            timeLimit: Duration = .seconds(5), callDeadline: Duration = .seconds(30), memoryLimit: Int? = 512 << 20,
            hardenBuiltins: Bool = true, channels: [ProgressChannel] = ProgressChannel.rings, values: [String: Double] = [:],
            idleTimeout: Duration = .seconds(600), evalEnabled: Bool = false, quarantine: Quarantine = Quarantine(),
            evaluateLimit: Duration = .seconds(5)
        ) {
            self.macro = macro
            self.arguments = arguments
            self.directory = directory
            self.stopOnEntry = stopOnEntry
            self.timeLimit = timeLimit
            self.callDeadline = callDeadline
            self.memoryLimit = memoryLimit
            self.hardenBuiltins = hardenBuiltins
            self.channels = channels
            self.values = values
            self.idleTimeout = idleTimeout
            self.evalEnabled = evalEnabled
            self.quarantine = quarantine
            self.evaluateLimit = evaluateLimit
        }
    }

    /// The session's files, sites and functions.
    public let map: SourceMap
    /// Files not loaded, each with why: it does not parse, or the live engine quarantined it.
    public let skipped: [(path: String, message: String)]
    /// The options it was launched with.
    public let options: Options

    let engine: MacroEngine
    let model: ProgressModel
    private let function: MacroFunction
    private let channel = DebugChannel()
    private let configuration = DebugConfiguration()
    private let events: @Sendable (DebugEvent) -> Void
    private let logger: Logger
    private let callID: Int
    private let initialValues: [(channel: String, value: Double)]
    private let phase = Mutex(Phase.configuring)
    /// The call deadline, over running time.
    private let budget: RunningBudget

    private enum Phase { case configuring, running, ended }

    /// Instruments the files of `options.directory` and loads them into a new engine; nothing
    /// runs until ``start()``. Throws ``DebugError`` (`launchFailed`) when the macro does not
    /// exist or does not load.
    public init(options: Options, logger: Logger, events: @escaping @Sendable (DebugEvent) -> Void) throws {
        self.options = options
        self.logger = logger
        self.events = events
        var files = try Self.files(of: options.directory, macro: options.macro)
        var skipped: [(path: String, message: String)] = []
        files.removeAll { file in
            guard file.macro != options.macro, let held = options.quarantine.holds(file.path, content: file.source) else { return false }
            skipped.append((file.path, "quarantined by the live engine: \(held.reason)"))
            return true
        }
        let required = files.first { $0.macro == options.macro }?.path
        // Files written as modules are instrumented as the engine runs them (wrapped), lib
        // modules after the lib scripts and each after what it imports.
        let shapes = Self.moduleShapes(of: files)
        files = Self.loadOrder(files, shapes: shapes)
        let program = try Instrumenter.instrument(
            files.map { file in
                guard let shape = shapes[file.path], let text = shape.text else { return Instrumenter.File(path: file.path, source: file.source, macro: file.macro) }
                return Instrumenter.File(path: file.path, source: text, macro: file.macro, lineOneShift: shape.shift ?? 0)
            }, required: required)
        skipped += program.skipped
        for (path, message) in skipped { logger.warning("debug session: \(path) is not loaded: \(message)") }
        self.skipped = skipped
        map = program.map
        engine = MacroEngine(
            configuration: .init(
                timeLimit: options.timeLimit, callDeadline: .seconds(366 * 86_400), evalEnabled: options.evalEnabled,
                // The built-ins are frozen by installAgent, once the agent has replaced toString.
                name: "debug:\(options.macro)", memoryLimit: options.memoryLimit, hardenBuiltins: false),
            logger: logger)
        engine.exceptionHandler = { _ in }
        let resources = Self.normalized(options.directory) + "/resources"
        engine.onLoopEventually { $0.resourcesDirectory = resources }
        engine.consoleHandler = { message in
            let category = message.level == .error || message.level == .warning ? "stderr" : "stdout"
            events(.output(DebugOutput(category: category, text: message.message + "\n")))
        }
        model = ProgressModel(channels: options.channels)
        model.restore(options.values)
        initialValues = model.values
        try engine.add(model)
        // The macro's store as it was at launch; no limit here: the live one refuses what passes it.
        let store = MacroStore(limit: .max)
        store.restore([options.macro: options.store])
        try engine.add(store)
        callID = engine.reserveCallID()
        budget = RunningBudget(options.callDeadline)
        try Self.installAgent(
            program, engine: engine, channel: channel, configuration: configuration,
            budget: budget, idle: options.idleTimeout, evaluateLimit: options.evaluateLimit, hardenBuiltins: options.hardenBuiltins,
            callID: callID, events: events, logger: logger)
        var target: MacroFunction?
        for (index, file) in program.files.enumerated() {
            do {
                if var shape = shapes[file.path] {
                    shape.text = program.code[index]
                    let loaded = try Self.loadModuleFile(shape, path: file.path, macro: file.macro, source: files.first { $0.path == file.path }?.source ?? "", engine: engine)
                    if file.macro == options.macro { target = loaded }
                } else if let name = file.macro {
                    let loaded = try engine.setMethod(javascript: program.code[index], key: name, file: file.path, report: false)
                    if name == options.macro { target = loaded }
                } else {
                    try engine.evaluateLibrary(program.code[index], file: file.path, shared: false)
                }
            } catch let error as MacroError {
                if file.macro == options.macro {
                    throw DebugError(.launchFailed, "\(options.macro) does not load: \(error.headline)")
                }
                logger.warning("debug session: \(file.path) is not loaded: \(error.headline)")
            }
        }
        guard let target else { throw DebugError(.launchFailed, "no macro named '\(options.macro)' in \(options.directory)") }
        function = target
        configuration.setStopOnEntry(options.stopOnEntry)
        if options.stopAtThrow { configuration.setStopsAtUncaught() }
    }

    deinit {
        channel.end()
    }

    // MARK: Configuring

    /// A breakpoint as a client asks for it.
    public struct BreakpointRequest: Sendable {
        /// 1-based line, and column when given.
        public var line: Int
        /// 1-based column, when given (else the line's first statement).
        public var column: Int?
        /// Stop only when this expression is truthy in the frame.
        public var condition: String?
        /// Stop only when the hit count matches: `5` / `== 5`, `>= 5`, `> 5`, `< 5`, `<= 5`, `% 5`.
        public var hitCondition: String?
        /// A logpoint: print this (with `{expression}` interpolated) instead of stopping.
        public var logMessage: String?

        /// Creates a request.
        public init(line: Int, column: Int? = nil, condition: String? = nil, hitCondition: String? = nil, logMessage: String? = nil) {
            self.line = line
            self.column = column
            self.condition = condition
            self.hitCondition = hitCondition
            self.logMessage = logMessage
        }
    }

    /// A breakpoint as set: bound to a statement (`verified`) at its exact position, or not.
    public struct Breakpoint: Sendable, Equatable {
        /// Its id (in `stopped` events' `hitBreakpointIds`).
        public var id: Int
        /// Bound to a statement.
        public var verified: Bool
        /// 1-based line it is bound to.
        public var line: Int
        /// 1-based column it is bound to.
        public var column: Int?
        /// Why it is not verified.
        public var message: String?
        /// The file it is bound in, for a function breakpoint (a line breakpoint's is the file it was set in).
        public var path: String?

        /// Creates an answer.
        public init(id: Int, verified: Bool, line: Int, column: Int?, message: String? = nil, path: String? = nil) {
            self.id = id
            self.verified = verified
            self.line = line
            self.column = column
            self.message = message
            self.path = path
        }
    }

    /// A function breakpoint as a client asks for it: a stop on entry to every function named
    /// `name` (at its first statement).
    public struct FunctionBreakpointRequest: Sendable {
        /// The function's name, as the call stack shows it (`double`, a method's key, a macro
        /// file's function named after the file).
        public var name: String
        /// Stop only when this expression is truthy in the function's frame.
        public var condition: String?
        /// Stop only when the hit count matches (as ``BreakpointRequest/hitCondition``).
        public var hitCondition: String?

        /// Creates a request.
        public init(name: String, condition: String? = nil, hitCondition: String? = nil) {
            self.name = name
            self.condition = condition
            self.hitCondition = hitCondition
        }
    }

    /// Replaces the breakpoints of the file at `path` (absolute). Each binds to the first
    /// statement at or after its line; the answer has where.
    public func setBreakpoints(path: String, _ requests: [BreakpointRequest]) -> [Breakpoint] {
        let path = Self.normalized(path)
        var answers: [Breakpoint] = []
        _ = configuration.setBreakpoints(file: path) { nextID in
            var bound: [DebugConfiguration.Breakpoint] = []
            for request in requests {
                let id = nextID
                nextID += 1
                guard let site = map.site(path: path, line: request.line, column: request.column) else {
                    answers.append(
                        Breakpoint(
                            id: id, verified: false, line: request.line, column: request.column,
                            message: map.files.contains(path) ? "no statement at or after this line" : "not a file of this session"))
                    continue
                }
                answers.append(Breakpoint(id: id, verified: true, line: site.line, column: site.column))
                bound.append(.init(id: id, site: site.id, condition: request.condition, hitCondition: request.hitCondition, logMessage: request.logMessage))
            }
            return bound
        }
        return answers
    }

    /// Replaces the function breakpoints. Each binds to the first statement of every function of
    /// its name; the answer has where (the first such function), or why not (`verified` false).
    public func setFunctionBreakpoints(_ requests: [FunctionBreakpointRequest]) -> [Breakpoint] {
        var answers: [Breakpoint] = []
        _ = configuration.setBreakpoints(file: Self.functionBreakpointsKey) { nextID in
            var bound: [DebugConfiguration.Breakpoint] = []
            for request in requests {
                let id = nextID
                nextID += 1
                let sites = map.entrySites(ofFunction: request.name)
                guard let first = sites.first else {
                    let why =
                        map.hasFunction(named: request.name)
                        ? "the function '\(request.name)' has no statement to stop at" : "no function named '\(request.name)' in this session's files"
                    answers.append(Breakpoint(id: id, verified: false, line: 0, column: nil, message: why))
                    continue
                }
                answers.append(Breakpoint(id: id, verified: true, line: first.line, column: first.column, path: map.files[first.file]))
                bound += sites.map {
                    .init(id: id, site: $0.id, condition: request.condition, hitCondition: request.hitCondition, logMessage: nil, function: true)
                }
            }
            return bound
        }
        return answers
    }

    /// The key function breakpoints are kept under beside the files' (no path is empty).
    static let functionBreakpointsKey = ""

    /// Which exceptions stop the session: every throw (`all`), or those no frame catches.
    public func setExceptionBreakpoints(all: Bool, uncaught: Bool) {
        configuration.setExceptions(all: all, uncaught: uncaught)
    }

    // MARK: Running

    /// Runs the macro (once; later calls do nothing). The `terminated` event ends the session.
    public func start() {
        let first = phase.withLock { phase -> Bool in
            guard phase == .configuring else { return false }
            phase = .running
            return true
        }
        guard first else { return }
        let engine = engine
        let callID = callID
        let budget = budget
        engine.eventLoop.execute { [self] in
            budget.start()
            // The call deadline counts running time only: while stopped, this loop is blocked and
            // its tasks wait; what was stopped is subtracted. (The hooks check it too.)
            let guardTask = engine.eventLoop.scheduleRepeatedTask(initialDelay: .milliseconds(20), delay: .milliseconds(20)) { _ in
                if budget.isExceeded() { engine.cancel(call: callID) }
            }
            engine.callFuture(function, arguments: options.arguments, deadline: .seconds(366 * 86_400), callID: callID)
                .whenComplete { [self] result in
                    guardTask.cancel()
                    finish(result)
                }
        }
    }

    /// Stops the running macro at its next statement (a `stopped` event, reason `pause`).
    public func pause() { configuration.requestPause() }

    /// True while the session is stopped and answers requests.
    public var isStopped: Bool { channel.isStopped }

    /// Ends the session: a running or stopped macro is stopped (its changes dropped), and the
    /// `terminated` event follows. A session never started ends at once.
    public func terminate() {
        let never = phase.withLock { phase -> Bool in
            if phase == .configuring { phase = .ended; return true }
            return false
        }
        channel.end()
        if never {
            events(
                .terminated(
                    DebugOutcome(
                        result: nil, error: MacroError(code: .cancelled, message: "the debug session ended before it ran"),
                        values: initialValues, changes: [])))
            return
        }
        _ = engine.cancel(call: callID)
    }

    /// Sends a request to the stopped session: `stackTrace`, `scopes` {frameId}, `variables`
    /// {ref}, `evaluate` {expression, frameId?}, `setVariable` {ref, name, value}, `completions`
    /// {text (up to the cursor), frameId?} → `{targets: [{label, type}], length}`, or a resume:
    /// `continue`, `next`, `stepIn`, `stepOut`. `reply` gets the agent's answer (any thread).
    public func request(_ op: String, _ arguments: MacroValue = [:], reply: @escaping @Sendable (Result<MacroValue, DebugError>) -> Void) {
        channel.submit(arguments.setting("op", .string(op)), reply: reply)
    }

    /// ``request(_:_:reply:)`` for async code.
    @discardableResult
    public func request(_ op: String, _ arguments: MacroValue = [:]) async throws(DebugError) -> MacroValue {
        let result = await withCheckedContinuation { continuation in
            request(op, arguments) { continuation.resume(returning: $0) }
        }
        return try result.get()
    }

    private func finish(_ result: Result<MacroValue, any Error>) {
        phase.withLock { $0 = .ended }
        let terminated = channel.hasEnded
        let timedOut = budget.exceeded.load(ordering: .relaxed)
        channel.end()
        let after = model.values
        let changes = zip(initialValues, after).compactMap { before, now -> DebugOutcome.Change? in
            before.value == now.value ? nil : .init(channel: now.channel, from: before.value, to: now.value)
        }
        var outcome = DebugOutcome(result: nil, error: nil, values: after, changes: changes)
        switch result {
        case .success(let value): outcome.result = value
        case .failure(let error as MacroError): outcome.error = error
        case .failure(let error): outcome.error = MacroError(code: .threw, message: "\(error)")
        }
        // Ended by a terminate or the idle time: whatever the stopped macro then did (the hooks
        // throw until the watchdog stops it), it was cancelled.
        if timedOut {
            outcome = DebugOutcome(
                result: nil,
                error: MacroError(code: .timeout, message: "timed out after \(options.callDeadline.milliseconds) ms of running (call_deadline_ms)", macro: options.macro),
                values: after, changes: changes)
        } else if terminated {
            outcome = DebugOutcome(
                result: nil, error: MacroError(code: .cancelled, message: "the debug session was terminated", macro: options.macro), values: after, changes: changes)
        }
        events(.terminated(outcome))
    }

    /// The path form breakpoints and frames use.
    public static func normalized(_ path: String) -> String {
        URL(fileURLWithPath: path).standardizedFileURL.resolvingSymlinksInPath().path
    }
}
