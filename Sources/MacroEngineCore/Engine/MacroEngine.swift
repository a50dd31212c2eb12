import CJavaScriptCore
import Logging
import NIOCore
import NIOPosix
import Synchronization

/// The macro engine: one JavaScriptCore context group and global context, confined to one thread.
///
/// Every JSC call runs on the engine's event loop (a single NIO thread it owns, or one you give
/// it). The synchronous API (`evaluate`, `call`, subscripts) hops there and waits; called from
/// that thread (inside a native function) it runs directly. JSC values never leave the loop:
/// results come back as ``MacroValue``.
///
/// ```swift
/// let engine = MacroEngine(logger: logger)
/// try engine.register("double") { (x: Double) in x * 2 }
/// engine["level"] = 3
/// let six = try engine.evaluate("double(level)")   // .number(6)
/// ```
public final class MacroEngine: Sendable {
    /// The process-wide engine, for hosts that need only one.
    public static let shared = MacroEngine()

    /// The loop every JSC call runs on.
    public let eventLoop: any EventLoop
    /// Where the default exception handler reports.
    public let logger: Logger
    /// Settings fixed at creation.
    public let configuration: Configuration

    private let ownedGroup: MultiThreadedEventLoopGroup?
    let running = RunningRegistry()
    /// Set while JavaScript is paused (see ``pauseJavaScript(reason:)``).
    let paused = PauseState()
    /// The watchdog's cancellation set, reachable from any thread.
    let runtimeCancellations: CancellationRequests
    let runtime: NIOLoopBound<JSRuntime>
    /// What the engine's thread is doing, readable from any thread (for ``StallWatch``).
    public let occupancy = EngineOccupancy()
    private let settings: Mutex<Settings>

    private struct Settings {
        var timeLimit: Duration { didSet { timeLimitNanoseconds = timeLimit.nanoseconds } }
        var callDeadline: Duration { didSet { callDeadlineNanoseconds = callDeadline.nanoseconds } }
        /// The two above in nanoseconds, converted when set (a `Duration`'s conversion is
        /// 128-bit arithmetic: a call's turn reads these instead).
        var timeLimitNanoseconds: Int64
        var callDeadlineNanoseconds: Int64
        var exceptionHandler: @Sendable (MacroError) -> Void
        var consoleHandler: @Sendable (ConsoleMessage) -> Void
        var turnObserver: (@Sendable () -> Void)?
        var participants: [any TurnParticipant] = []
        var runs: RunLog?
    }

    /// Settings fixed when the engine is created.
    public struct Configuration: Sendable {
        /// Default limit for each synchronous run of JavaScript (5 s): a call, a timer callback.
        public var timeLimit: Duration
        /// Default deadline of a whole call, awaited time included (30 s).
        public var callDeadline: Duration
        /// Whether `eval` and `new Function` work inside macros (off: macros are code on disk).
        public var evalEnabled: Bool
        /// The context's name, shown in diagnostics.
        public var name: String
        /// A macro is stopped once the JS heap passes this many bytes (512 MiB; nil: no limit).
        public var memoryLimit: Int?
        /// Freeze the JavaScript built-ins before any macro runs (see `Lockdown`).
        public var hardenBuiltins: Bool

        /// Creates a configuration.
        public init(
            timeLimit: Duration = .seconds(5), callDeadline: Duration = .seconds(30), evalEnabled: Bool = false,
            name: String = "MacroEngine", memoryLimit: Int? = 512 << 20, hardenBuiltins: Bool = true
        ) {
            self.memoryLimit = memoryLimit
            self.hardenBuiltins = hardenBuiltins
            self.timeLimit = timeLimit
            self.callDeadline = callDeadline
            self.evalEnabled = evalEnabled
            self.name = name
        }
    }

    /// Creates an engine. Without `eventLoop` it starts its own thread, stopped when the engine is
    /// released; with one, every JSC call runs on that loop (e.g. a server's, to avoid a hop).
    public init(
        configuration: Configuration = Configuration(),
        eventLoop: (any EventLoop)? = nil,
        logger: Logger = Logger(label: "MacroEngine")
    ) {
        if let eventLoop {
            self.eventLoop = eventLoop
            self.ownedGroup = nil
        } else {
            let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
            self.ownedGroup = group
            self.eventLoop = group.next()
        }
        self.logger = logger
        self.configuration = configuration
        let loop = self.eventLoop
        let occupancy = self.occupancy
        let makeRuntime: @Sendable () -> NIOLoopBound<JSRuntime> = {
            let runtime = JSRuntime(name: configuration.name, occupancy: occupancy)
            runtime.watchdog.memoryLimit = configuration.memoryLimit
            withJSString("eval and new Function are disabled in macros (config: allow_eval)") {
                JSGlobalContextSetEvalEnabled(runtime.globalContext, configuration.evalEnabled, $0)
            }
            return NIOLoopBound(runtime, eventLoop: loop)
        }
        self.runtime = loop.inEventLoop ? makeRuntime() : try! loop.submit(makeRuntime).wait()
        let runtimeBox = self.runtime
        self.runtimeCancellations = loop.inEventLoop ? runtimeBox.value.watchdog.cancellations : try! loop.submit { runtimeBox.value.watchdog.cancellations }.wait()
        let reporter = logger
        self.settings = Mutex(
            Settings(
                timeLimit: configuration.timeLimit,
                callDeadline: configuration.callDeadline,
                timeLimitNanoseconds: configuration.timeLimit.nanoseconds,
                callDeadlineNanoseconds: configuration.callDeadline.nanoseconds,
                exceptionHandler: { MacroEngine.report($0, to: reporter) },
                consoleHandler: { message in
                    reporter.log(level: message.level, "\(message.message)", metadata: message.macro.map { ["macro": "\($0)"] } ?? [:])
                }))
        let unownedSelf = self
        onLoopEventually { runtime in
            runtime.engine = unownedSelf
            try! unownedSelf.installTimers(runtime: runtime)
            try! unownedSelf.installConsole(runtime: runtime)
            unownedSelf.installModuleNatives(runtime: runtime)
            // Last, once the engine's own helpers exist and before any macro or lib file runs.
            if configuration.hardenBuiltins { try! runtime.installLockdown() }
        }
        if !loop.inEventLoop { try? loop.submit {}.wait() }
    }

    deinit {
        let runtime = runtime
        eventLoop.execute { runtime.value.close() }
        ownedGroup?.shutdownGracefully { _ in }
    }

    // MARK: Settings

    /// Called with every error of an evaluation or call started from Swift, before it is thrown.
    /// The default logs it at `error` level with message, name, macro, file, line, column and stack
    /// as metadata (like `JSContext.exceptionHandler`).
    public var exceptionHandler: @Sendable (MacroError) -> Void {
        get { settings.locked { $0.exceptionHandler } }
        set { settings.locked { $0.exceptionHandler = newValue } }
    }

    /// Receives every `console.log/info/warn/error/debug` of the macros. The default logs it at the
    /// matching level with the macro's name as metadata.
    public var consoleHandler: @Sendable (ConsoleMessage) -> Void {
        get { settings.locked { $0.consoleHandler } }
        set { settings.locked { $0.consoleHandler = newValue } }
    }

    /// The time limit for evaluations and calls that do not give their own.
    public var timeLimit: Duration {
        get { settings.locked { $0.timeLimit } }
        set { settings.locked { $0.timeLimit = newValue } }
    }

    /// The deadline of a whole call (awaited time included) when the call does not give one.
    public var callDeadline: Duration {
        get { settings.locked { $0.callDeadline } }
        set { settings.locked { $0.callDeadline = newValue } }
    }

    /// Called on the engine loop after every synchronous run of JavaScript (a call, a timer
    /// callback, a promise continuation): the place to publish what a turn changed.
    public func onTurnEnd(_ observer: (@Sendable () -> Void)?) {
        settings.locked { $0.turnObserver = observer }
    }

    /// Adds native state that takes part in turns: begun before each outermost run of
    /// JavaScript, committed when it succeeds, rolled back when it throws, rejects or times out.
    public func addTurnParticipant(_ participant: any TurnParticipant) {
        settings.locked { $0.participants.append(participant) }
    }

    /// Where every macro call's run is recorded (nil: none is; `record_runs: false`).
    public var runLog: RunLog? {
        get { settings.locked { $0.runs } }
        set { settings.locked { $0.runs = newValue } }
    }

    /// The participants a turn begins and commits or rolls back (see ``Entry``).
    var turnParticipants: [any TurnParticipant] { settings.locked { $0.participants } }

    /// What a call's turn reads of the settings, in one read (see ``turnSettings``).
    struct TurnSettings {
        /// ``timeLimit`` in nanoseconds.
        var timeLimitNanoseconds: Int64
        /// ``callDeadline``, and in nanoseconds.
        var callDeadline: Duration
        var callDeadlineNanoseconds: Int64
        /// ``turnParticipants``.
        var participants: [any TurnParticipant]
        /// The turn observer (``onTurnEnd(_:)``), run after the turn.
        var turnObserver: (@Sendable () -> Void)?
        /// ``runLog``.
        var runs: RunLog?
    }

    /// The time limit, the call deadline, ``turnParticipants`` and the turn observer in one read
    /// (a call's turn).
    var turnSettings: TurnSettings {
        settings.locked {
            TurnSettings(
                timeLimitNanoseconds: $0.timeLimitNanoseconds, callDeadline: $0.callDeadline, callDeadlineNanoseconds: $0.callDeadlineNanoseconds,
                participants: $0.participants, turnObserver: $0.turnObserver, runs: $0.runs)
        }
    }

    /// The default exception handler: one log line with the fields as metadata.
    public static func report(_ error: MacroError, to logger: Logger) {
        var metadata: Logger.Metadata = ["code": "\(error.code)"]
        if let name = error.errorName { metadata["error.name"] = "\(name)" }
        if let macro = error.macro { metadata["macro"] = "\(macro)" }
        if let file = error.file { metadata["file"] = "\(file)" }
        if let line = error.line { metadata["line"] = "\(line)" }
        if let column = error.column { metadata["column"] = "\(column)" }
        if let stack = error.stack { metadata["stack"] = "\(stack)" }
        logger.error("\(error.headline)", metadata: metadata)
    }

    // MARK: Running on the loop

    /// Runs `body` on the engine's loop and waits for it. Runs inline when already there.
    func sync<T: Sendable>(_ body: @escaping @Sendable (JSRuntime) throws -> T) throws -> T {
        let runtime = runtime
        if eventLoop.inEventLoop { return try body(runtime.value) }
        return try eventLoop.submit { try body(runtime.value) }.wait()
    }

    /// Schedules `body` on the loop, fire and forget (used by deinitializers).
    func onLoopEventually(_ body: @escaping @Sendable (JSRuntime) -> Void) {
        let runtime = runtime
        if eventLoop.inEventLoop { body(runtime.value); return }
        eventLoop.execute { body(runtime.value) }
    }

    // MARK: Evaluating

    /// Evaluates a script and returns its completion value. `file` names it in errors and stacks.
    @discardableResult
    public func evaluate(_ source: String, file: String? = nil, timeLimit: Duration? = nil) throws -> MacroValue {
        try sync { runtime in
            try self.enter(runtime, .script(macro: nil, timeLimit: timeLimit)) {
                try runtime.macroValue(try runtime.evaluateRaw(source, file: file))
            }
        }
    }

    /// Calls the global function `name` with `arguments`. Throws `.noSuchMacro` when there is no
    /// such function, and the macro's error (`.threw`, `.timeout`) when it fails.
    @discardableResult
    public func call(_ name: String, arguments: [MacroValue] = [], timeLimit: Duration? = nil) throws -> MacroValue {
        if !eventLoop.inEventLoop { return try callFuture(name, arguments: arguments, deadline: timeLimit).wait() }
        return try sync { runtime in
            guard let function = runtime.context.globalObject[name].objectRef,
                JSObjectIsFunction(runtime.context.ref, function)
            else {
                let error = MacroError(code: .noSuchMacro, message: "no function named '\(name)'", macro: name)
                self.exceptionHandler(error)
                throw error
            }
            let args = try arguments.map { try runtime.jsValue($0).ref as JSValueRef? }
            return try self.enter(runtime, .script(macro: name, timeLimit: timeLimit)) {
                try runtime.macroValue(try runtime.call(function, arguments: args, macro: name))
            }
        }
    }

    /// Calls the global function `name` as an asynchronous macro call: a returned promise
    /// settles the future; the whole call must finish within `deadline` (default
    /// ``callDeadline``), awaited time included. Timers and promises run on the engine loop
    /// meanwhile, and so do other calls.
    public func callFuture(_ name: String, arguments: [MacroValue] = [], deadline: Duration? = nil) -> EventLoopFuture<MacroValue> {
        let start = { @Sendable [self] () -> EventLoopFuture<MacroValue> in
            let runtime = self.runtime.value
            guard let function = runtime.context.globalObject[name].objectRef, JSObjectIsFunction(runtime.context.ref, function) else {
                let error = MacroError(code: .noSuchMacro, message: "no function named '\(name)'", macro: name)
                self.exceptionHandler(error)
                return self.eventLoop.makeFailedFuture(error)
            }
            return self.invoke(function, arguments: arguments, macro: name, budget: deadline, runtime: runtime)
        }
        // Already on the engine's loop (a server sharing it): start now instead of queueing.
        guard eventLoop.inEventLoop, runtime.value.entryDepth == 0 else { return eventLoop.flatSubmit(start) }
        return start()
    }

    /// Like ``callFuture(_:arguments:deadline:)`` for a function handle. The closure that crosses
    /// to the engine's loop holds the ``MacroFunction`` itself, whose protection keeps the JS
    /// object alive until the call starts (a reload in between cannot free it).
    /// `explainer` rewrites a failure before the caller hears it.
    func callFuture(
        _ function: MacroFunction, arguments: [MacroValue], deadline: Duration?, callID: Int? = nil,
        explainer: (any CallFailureExplainer)? = nil
    ) -> EventLoopFuture<MacroValue> {
        // Already on the engine's loop and outside JavaScript (a server sharing the loop): start
        // now, without a closure to carry the call over.
        guard eventLoop.inEventLoop, case let runtime = runtime.value, runtime.entryDepth == 0 else {
            return eventLoop.flatSubmit { [self] in
                start(function, arguments: arguments, deadline: deadline, callID: callID, explainer: explainer, runtime: runtime.value)
            }
        }
        guard let object = function.objectRef(in: runtime) else { return belongsElsewhere(function, explainer) }
        return invoke(object, arguments: arguments, macro: function.name, budget: deadline, callID: callID, explainer: explainer, runtime: runtime)
    }

    private func belongsElsewhere(_ function: MacroFunction, _ explainer: (any CallFailureExplainer)?) -> EventLoopFuture<MacroValue> {
        let error: any Error = MacroError.conversion("function '\(function.name)' belongs to another engine")
        return eventLoop.makeFailedFuture(explainer?.explain(error) ?? error)
    }

    /// ``callFuture(_:arguments:deadline:callID:explainer:)`` on the loop.
    private func start(
        _ function: MacroFunction, arguments: [MacroValue], deadline: Duration?, callID: Int?,
        explainer: (any CallFailureExplainer)?, runtime: JSRuntime
    ) -> EventLoopFuture<MacroValue> {
        guard let object = function.objectRef(in: runtime) else { return belongsElsewhere(function, explainer) }
        return invoke(object, arguments: arguments, macro: function.name, budget: deadline, callID: callID, explainer: explainer, runtime: runtime)
    }

    // MARK: Globals

    /// Reads a global (`.conversion` error for values that cannot be converted).
    public func value(forKey key: String) throws -> MacroValue {
        try sync { runtime in try runtime.macroValue(runtime.context.globalObject[key]) }
    }

    /// Sets a global. Engine globals (natives, `progress`) are read-only: setting one fails with
    /// `.invalidName`.
    public func setValue(_ value: MacroValue, forKey key: String) throws {
        try sync { runtime in
            guard !runtime.isBuiltinGlobal(key) else {
                throw MacroError(code: .invalidName, message: "'\(key)' is an engine global and cannot be replaced")
            }
            runtime.defineGlobal(key, try runtime.jsValue(value), readOnly: false)
        }
    }

    /// `engine["level"] = 3`, `let v = engine["level"]`. A failure (a cyclic value, a read-only
    /// global) goes to ``exceptionHandler``; reading then gives `.undefined`.
    public subscript(key: String) -> MacroValue {
        get {
            do { return try value(forKey: key) } catch let error as MacroError {
                exceptionHandler(error)
                return .undefined
            } catch { return .undefined }
        }
        set {
            do { try setValue(newValue, forKey: key) } catch let error as MacroError {
                exceptionHandler(error)
            } catch {}
        }
    }

    // MARK: Native functions

    /// Registers a Swift closure as the global function `name`.
    /// The general form: JS arguments in, a JS value out. A thrown ``MacroError`` becomes a JS
    /// exception of its `errorName` (`TypeError`, ...), anything else an `Error` — either way the
    /// macro can `catch` it. The global is read-only, so macros cannot replace it.
    package func register(_ name: String, function body: @escaping @Sendable ([JSValue]) throws -> JSValue) throws {
        try register(name, fast: { try body($0.values) })
    }

    /// Registers a native global that reads its arguments in place (no array per call).
    func register(_ name: String, fast body: @escaping @Sendable (NativeArguments) throws -> JSValue) throws {
        try sync { runtime in
            guard MacroName.isIdentifier(name) else {
                throw MacroError(code: .invalidName, message: "'\(name)' is not a JavaScript identifier")
            }
            guard runtime.nativeGlobalNames.contains(name) || !runtime.isBuiltinGlobal(name) else {
                throw MacroError(code: .invalidName, message: "'\(name)' is a JavaScript built-in and cannot be replaced")
            }
            runtime.defineNativeGlobal(name, fast: body)
        }
    }

    /// Registers a closure taking and returning ``MacroValue``s.
    public func register(_ name: String, values body: @escaping @Sendable ([MacroValue]) throws -> MacroValue) throws {
        try register(
            name,
            function: { [weak self] arguments in
                guard let self else { throw MacroError.engineGone }
                let runtime = self.runtime.value
                return try runtime.jsValue(try body(arguments.map { try runtime.macroValue($0) }))
            })
    }

    /// Registers `(Double) -> Void`: the argument must be a finite number, else a TypeError naming
    /// the function is thrown in JS and `body` is not called.
    public func register(_ name: String, _ body: @escaping @Sendable (Double) throws -> Void) throws {
        try register(
            name,
            fast: { arguments in
                try body(try Self.finiteNumber(arguments.first, function: name))
                return arguments.context.undefined
            })
    }

    /// Registers `(Double) -> Double` with the same argument check.
    public func register(_ name: String, _ body: @escaping @Sendable (Double) throws -> Double) throws {
        try register(
            name,
            fast: { arguments in
                arguments.context.number(try body(try Self.finiteNumber(arguments.first, function: name)))
            })
    }

    /// Registers `() -> Double`.
    public func register(_ name: String, _ body: @escaping @Sendable () throws -> Double) throws {
        try register(name, fast: { arguments in arguments.context.number(try body()) })
    }

    /// Registers `() -> Void`.
    public func register(_ name: String, _ body: @escaping @Sendable () throws -> Void) throws {
        try register(
            name,
            fast: { arguments in
                try body()
                return arguments.context.undefined
            })
    }

    /// The number in `value`, or a TypeError naming `function` and what it got instead.
    package static func finiteNumber(_ value: JSValue?, function: String) throws -> Double {
        guard let value else { throw MacroError.typeError("\(function): expected a finite number, got no argument") }
        guard let number = value.number, number.isFinite else {
            throw MacroError.typeError("\(function): expected a finite number, got \(value.typeDescription)")
        }
        return number
    }

    // MARK: Methods

    /// Evaluates `javascript` — one function expression — and registers it as the global `key`
    /// Returns the function. Throws `.syntax` or `.notAFunction` with the
    /// position in `file`, and `.invalidName` when `key` is not an identifier or is an engine global.
    @discardableResult
    public func setMethod(javascript: String, key: String, file: String? = nil) throws -> MacroFunction {
        try setMethod(javascript: javascript, key: key, file: file, report: true)
    }

    /// ``setMethod(javascript:key:file:)``; `report: false` leaves a failure to the caller (the
    /// library logs a file that does not load once, with its entry).
    func setMethod(javascript: String, key: String, file: String?, report: Bool) throws -> MacroFunction {
        try sync { runtime in
            do {
                try MacroName.validate(key, runtime: runtime)
                let path = file ?? "\(key).js"
                let made = try runtime.macroFunction(javascript, file: path, macro: key)
                let function = MacroFunction(engine: self, object: made.function.objectRef!, runtime: runtime)
                try self.install(function, key: key, file: path, javascript: javascript, imports: made.imports, runtime: runtime)
                return function
            } catch var error as MacroError {
                if error.macro == nil { error.macro = key }
                if report { self.exceptionHandler(error) }
                throw error
            }
        }
    }

    /// Makes macro `key`'s function from `javascript` without installing it (a module reload
    /// prepares every dependent before it swaps any in); returns it and the paths it imports.
    func prepareMethod(javascript: String, key: String, file: String) throws -> (function: MacroFunction, imports: [String]) {
        try sync { runtime in
            do {
                let made = try runtime.macroFunction(javascript, file: file, macro: key)
                return (MacroFunction(engine: self, object: made.function.objectRef!, runtime: runtime), made.imports)
            } catch var error as MacroError {
                if error.macro == nil { error.macro = key }
                throw error
            }
        }
    }

    /// Makes `function` the live version of macro `key`: its global, its owner, its imports.
    func install(_ function: MacroFunction, key: String, file: String, javascript: String, imports: [String], runtime: JSRuntime) throws {
        guard let object = function.objectRef(in: runtime) else { throw MacroError(code: .io, message: "the function belongs to another engine", macro: key) }
        // Frozen as the engine's natives are: no macro changes what another's call of it does
        // (`Object.defineProperty(bump, "call", ...)`, `Object.setPrototypeOf(bump, null)`).
        runtime.hardenEngineGlobal("macro " + key, JSValue(object, in: runtime.context))
        try runtime.defineMacroGlobal(key, JSValue(object, in: runtime.context))
        let owner = CodeOwner(file: file, source: javascript, macro: key)
        // A handler registered by an older text of the file is that text's code: dropped.
        if let previous = runtime.macroOwners[key], previous.hash != owner.hash { runtime.modules.dropHandler(of: file) }
        runtime.macroOwners[key] = owner
        runtime.modules.setImports(of: ModulePaths.normalized(file), imports)
        runtime.modules.installTriggers(of: ModulePaths.normalized(file))
    }

    /// The macro whose code is running, on the engine's loop (nil elsewhere, or for code no
    /// macro owns).
    var runningMacro: String? { eventLoop.inEventLoop ? runtime.value.currentOwner?.macro : nil }

    /// Checks that `javascript` would load as a macro named `key` (valid name, parses, one function
    /// expression) without registering anything. Throws the error `setMethod` would.
    public func checkMacro(javascript: String, key: String, file: String? = nil) throws {
        try sync { runtime in
            try MacroName.validate(key, runtime: runtime)
            _ = try runtime.functionExpression(javascript, file: file ?? "\(key).js", macro: key)
        }
    }

    /// For a REPL: true when `source` fails to parse only because it ends too early (an open
    /// brace, string or comment), so more input should be read before evaluating.
    public func isIncomplete(_ source: String) throws -> Bool {
        try sync { runtime in
            do {
                try runtime.checkSyntax(source, file: nil)
                return false
            } catch let error as MacroError {
                let message = error.message
                return message.contains("Unexpected EOF") || message.contains("end of script") || message.contains("Unterminated")
                    || message.contains("was not closed")
            }
        }
    }

    /// For a REPL: evaluates `source` as a script (a returned promise is awaited, within the
    /// deadline) and formats the value like `console.log` does, strings quoted.
    public func evaluateForDisplay(_ source: String, file: String = "<repl>") throws -> String {
        let value = try sync { runtime -> MacroValue in
            let result = try self.enter(runtime, .script(macro: nil, timeLimit: nil)) { try runtime.evaluateRaw(source, file: file) }
            let inspect = try runtime.evaluateRaw(
                "(function (f) { return function (v) { return f([v && typeof v === 'string' ? JSON.stringify(v) : v]) } })(" + Self.inspectSource + ")", file: nil)
            let text = try runtime.call(inspect.objectRef!, arguments: [result.ref], macro: nil)
            let isPromise = result.objectRef.map { _ in result["then"].isFunction } ?? false
            if isPromise {
                runtime.defineGlobal("__replPending", result, readOnly: false)
                return .null
            }
            return try runtime.macroValue(text)
        }
        guard value == .null else { return value.stringValue ?? "" }
        // A promise: await it like a macro call, then show what it settled to.
        try evaluate("function __replAwait() { return __replPending.then(function (v) { return v === undefined ? '' : v }) }")
        let settled = try call("__replAwait")
        return settled.jsonText(pretty: false)
    }

    /// Evaluates a lib file (a plain script whose top-level declarations every macro sees):
    /// syntax is checked first, so a broken file runs nothing and what its previous version
    /// defined stays. Runs under the time limit, as the file's own code (see ``CodeOwner``).
    ///
    /// Its top-level declarations become globals every macro reads and none can replace
    /// (see `LibGlobals`); `shared: false` evaluates it as a plain script instead, whose
    /// declarations are ordinary globals (a debug session's instrumented copy).
    public func evaluateLibrary(_ source: String, file: String) throws {
        try evaluateLibrary(source, file: file, shared: true)
    }

    func evaluateLibrary(_ source: String, file: String, shared: Bool) throws {
        try sync { runtime in
            try runtime.checkSyntax(source, file: file)
            let names = shared ? try runtime.shapeCheck?.topLevelNames(of: source, file: file) : nil
            do {
                _ = try runtime.loading(file, source: source) {
                    try self.enter(runtime, .script(macro: nil, timeLimit: nil)) {
                        guard let names else { return try runtime.evaluateRaw(source, file: file) }
                        let wrapped = JSRuntime.libScriptText(source, names: names)
                        runtime.lineOneShift[file] = wrapped.shift
                        let factory = try runtime.evaluateRaw(wrapped.text, file: file)
                        guard let object = factory.objectRef else { throw MacroError(code: .threw, message: "a lib file's wrapper is not a function", file: file) }
                        runtime.nameTopLevel(object)
                        let getters = try runtime.call(object, arguments: [], macro: nil)
                        try runtime.publishLibGlobals(file: file, getters: getters)
                        return getters
                    }
                }
            } catch var error as MacroError where error.code == .timeout || error.code == .memoryLimit {
                error.message = JSRuntime.stoppedAtLoad(error)
                throw error
            }
        }
    }

    /// Removes the global `key` set by ``setMethod(javascript:key:file:)`` (engine globals stay).
    public func removeMethod(key: String) throws {
        try sync { runtime in
            guard !runtime.isBuiltinGlobal(key) else { return }
            try runtime.removeMacroGlobal(key)
            if let owner = runtime.macroOwners[key] { runtime.modules.forget(ModulePaths.normalized(owner.file)) }
        }
    }

    /// True when `name` is taken by the engine (a JS built-in such as `Math`, or a native).
    public func isEngineGlobal(_ name: String) throws -> Bool {
        // On the loop (every macro.call's params): no closure to carry the question over.
        if eventLoop.inEventLoop { return runtime.value.isBuiltinGlobal(name) }
        return try sync { $0.isBuiltinGlobal(name) }
    }
}
