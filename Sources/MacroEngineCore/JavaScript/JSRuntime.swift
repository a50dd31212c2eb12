import CJavaScriptCore
import Foundation
import NIOCore
import OrderedCollections

/// Everything that touches JavaScriptCore: one context group, one global context, the watchdog.
/// Lives on the engine's event loop only (held in a `NIOLoopBound` by ``MacroEngine``); it is not
/// `Sendable`, so the compiler keeps it there.
final class JSRuntime {
    let group: JSContextGroupRef
    let globalContext: JSGlobalContextRef
    let context: JSContext
    let watchdog: Watchdog
    /// What the engine thread is doing, for the stall watch on another thread.
    let occupancy: EngineOccupancy
    /// Set by the owner; used to wrap JS functions as ``MacroFunction``s. Weak: the engine owns
    /// the runtime (through its loop-bound box), never the other way round.
    weak var engine: MacroEngine?
    /// How deep we are in evaluations started from Swift (0 = idle).
    private(set) var entryDepth = 0
    private var closed = false
    /// Names the engine's own globals had before any macro loaded, plus natives registered later.
    private(set) var builtinGlobals: Set<String> = []
    /// Files evaluated behind a wrapper on their line 1 (`(` before a macro's function, a
    /// module's function header): how many columns their line 1 is shifted right.
    var lineOneShift: [String: Int] = [:]
    /// The text last evaluated under each file name (a macro file's as wrapped), and the name
    /// its top-level function expression goes by (the macro's): where a stop happened is found
    /// in it (``stoppedLocation()``).
    var evaluatedSources: [String: (text: String, topName: String?)] = [:]
    /// The call whose code is running (nil for plain evaluations).
    var currentCall: CallContext?
    /// Pending setTimeout/setInterval timers by id.
    var timers: [Int: TimerEntry] = [:]
    var timerCounter = 0
    /// While a timer callback runs: the expiry its own timers inherit.
    var currentTimerExpiry: NIODeadline?
    /// The file answerable for the code that runs now (see ``CodeOwner``): set by whoever starts
    /// an outermost entry (a call, a timer, a file's load), recorded in ``occupancy``, and
    /// inherited by the timers that code arms.
    var currentOwner: CodeOwner?
    /// The ES modules, their imports and the reload handlers (``ModuleRegistry``).
    lazy var modules = ModuleRegistry(context: context.ref)
    /// The namespace maker of ``makeModule(path:source:shape:version:)``, made once, protected.
    var namespaceMakerRef: JSObjectRef?
    /// The progress channels of the models added (what a `watch` trigger may name).
    var progressChannels: [String] = []
    /// Where `resource(NAME)` reads from (the library's `resources` folder); nil: no resources.
    var resourcesDirectory: String?
    /// acorn, in a context group of its own: checks a macro file's shape before it runs.
    var shapeCheck: ShapeCheck? = ShapeCheck()
    /// The owner of each live macro function, by macro name (set when a version goes live).
    var macroOwners: [String: CodeOwner] = [:] {
        didSet { lastOwner = nil }
    }
    /// The last answer of ``owner(ofMacro:)``: a server calls the same macro over and over, and
    /// comparing a short name costs less than hashing it.
    private var lastOwner: (macro: String, owner: CodeOwner?)?

    /// ``macroOwners``[`macro`].
    func owner(ofMacro macro: String) -> CodeOwner? {
        if let lastOwner, lastOwner.macro == macro { return lastOwner.owner }
        let owner = macroOwners[macro]
        lastOwner = (macro, owner)
        return owner
    }
    /// Set when the running turn failed without throwing to Swift (a rejection seen in it).
    var turnFailed = false
    /// True while a turn's transaction is open.
    var inTransaction = false
    /// Work to run once the current turn has committed or rolled back (completing callers).
    var afterTurn: [() -> Void] = []
    /// Runs that ended inside the current turn: their records are finished when it ends, with
    /// what it changed (its capacity is kept: no allocation per call).
    var runsEnding: [(runs: RunLog, context: CallContext, outcome: Result<MacroValue, any Error>)] = []
    /// A run's draft the run log dropped and gave back, for the next run to reuse (no
    /// allocation per run once the rings are full).
    var spareDraft: RunDraft?

    /// The run of `context` ended: its draft goes to `runs` and leaves the context (which
    /// JavaScript objects may keep alive until a collection), so that once the log drops it
    /// nothing holds it and it can serve a later run (``spareDraft``).
    func recordFinished(_ context: CallContext, _ draft: RunDraft, in runs: RunLog, outcome: Result<MacroValue, any Error>, atTurnEnd: Bool) {
        context.draft = nil
        if let spare = runs.finished(draft, outcome: outcome, atTurnEnd: atTurnEnd) { spareDraft = spare }
    }
    /// The invoke helpers by arity (``invokeHelper(arity:)``), made once, kept protected.
    var invokeHelperRefs: [JSObjectRef] = []
    var pendingSentinelRef: JSObjectRef?
    /// `__macroengine_handlers(fulfilled)`: makes the settle function of ``invokingContext``.
    var handlersRef: JSObjectRef?
    /// The macro-global helpers (``defineMacroGlobal(_:_:)``), made once, kept protected.
    var macroGlobalDefineRef: JSObjectRef?
    var macroGlobalRemoveRef: JSObjectRef?
    /// The lib-global helper (``publishLibGlobals(file:getters:)``), made once, kept protected.
    var libGlobalDefineRef: JSObjectRef?
    /// The stack-trace limit's guard (``StackLimitGuard``).
    var stackLimit = StackLimitGuard()
    /// The call whose macro function the invoke helper is running (innermost; nil outside).
    var invokingContext: CallContext?
    /// Calls started from Swift that are pending: their first turn ended without settling them
    /// (a call settled in its first turn is never listed).
    var pendingCalls: [ObjectIdentifier: CallContext] = [:]

    init(name: String, occupancy: EngineOccupancy) {
        precondition(JSCOptions.applied)
        self.occupancy = occupancy
        occupancy.adoptEngineThread()
        group = JSContextGroupCreate()
        globalContext = JSGlobalContextCreateInGroup(group, nil)
        context = JSContext(globalContext)
        watchdog = Watchdog(group: group, occupancy: occupancy)
        withJSString(name) { JSGlobalContextSetName(globalContext, $0) }
        builtinGlobals = Set(ownPropertyNames(of: context.globalObject))
        if let probe = try? evaluateRaw(Self.stackProbeSource, file: nil).objectRef {
            JSValueProtect(globalContext, probe)
            watchdog.stackProbe = probe
        }
    }

    /// Releases the context and group. Called on the loop when the engine goes away.
    func close() {
        guard !closed else { return }
        for id in Array(timers.keys) { clearTimer(id) }
        cancelPendingCalls()
        closed = true
        shapeCheck = nil
        // Native closures may capture this runtime; dropping the boxes breaks any such cycle.
        nativeGlobals.removeAll()
        JSGlobalContextRelease(globalContext)
        JSContextGroupRelease(group)
    }

    var isClosed: Bool { closed }

    // MARK: Globals

    /// All own property names of an object, enumerable or not (`Object.getOwnPropertyNames`).
    func ownPropertyNames(of object: JSValue) -> [String] {
        let getNames = try? evaluateRaw("Object.getOwnPropertyNames", file: nil)
        guard let getNames, let fn = getNames.objectRef else { return [] }
        var exception: JSValueRef?
        var args: [JSValueRef?] = [object.ref]
        guard let result = JSObjectCallAsFunction(context.ref, fn, nil, 1, &args, &exception), exception == nil else {
            return []
        }
        let array = JSValue(result, in: context)
        let length = array[jsString: JSNames.length.ref].number.flatMap { Int(exactly: $0) } ?? 0
        guard let arrayObject = array.objectRef, length >= 0, length <= Int(UInt32.max) else { return [] }
        return (0..<length).compactMap { i in
            JSValue(JSObjectGetPropertyAtIndex(context.ref, arrayObject, UInt32(i), nil), in: context).string
        }
    }

    /// Defines a global. Engine globals are read-only and undeletable, so a macro cannot replace them.
    func defineGlobal(_ name: String, _ value: JSValue, readOnly: Bool) {
        let attributes: JSPropertyAttributes =
            readOnly
            ? JSPropertyAttributes(kJSPropertyAttributeReadOnly | kJSPropertyAttributeDontDelete)
            : JSPropertyAttributes(kJSPropertyAttributeNone)
        withJSString(name) { JSObjectSetProperty(context.ref, JSContextGetGlobalObject(context.ref), $0, value.ref, attributes, nil) }
        if readOnly {
            builtinGlobals.insert(name)
            hardenEngineGlobal(name, value)
        }
    }

    /// True when `name` is one of the engine's globals (JS built-ins like `Math` and natives).
    func isBuiltinGlobal(_ name: String) -> Bool { builtinGlobals.contains(name) }

    /// Makes a native function object: `typeof` is "function", and since its prototype is
    /// `Function.prototype`, `call`, `apply` and `bind` work.
    func makeFunction(name: String, body: @escaping ([JSValue]) throws -> JSValue) -> JSValue {
        makeFunctionObject(NativeFunctionBox(name: name, body: { try body($0.values) }))
    }

    /// A native function reading its arguments in place (the hot paths: progress accessors).
    func makeFunction(name: String, fast body: @escaping (NativeArguments) throws -> JSValue) -> JSValue {
        makeFunctionObject(NativeFunctionBox(name: name, body: body))
    }

    private func makeFunctionObject(_ box: NativeFunctionBox) -> JSValue {
        let object = JSObjectMake(context.ref, NativeFunctionClass.shared.ref, Unmanaged.passRetained(box).toOpaque())!
        // `name` first: once Function.prototype (whose `name` is read-only) is the prototype, a
        // plain set of `name` would be refused.
        let nameAttributes = JSPropertyAttributes(kJSPropertyAttributeReadOnly | kJSPropertyAttributeDontEnum)
        withJSString(box.name) { nameString in
            JSObjectSetProperty(context.ref, object, JSNames.name.ref, JSValueMakeString(context.ref, nameString), nameAttributes, nil)
        }
        JSObjectSetPrototype(context.ref, object, functionPrototype)
        return JSValue(object, in: context)
    }

    private lazy var functionPrototype: JSValueRef = context.globalObject["Function"]["prototype"].ref

    /// Boxes of the native globals, so registering a name again swaps the closure in place (the
    /// global is read-only and undeletable, so it cannot be redefined).
    private var nativeGlobals: [String: NativeFunctionBox] = [:]

    /// Names registered with ``defineNativeGlobal(_:body:)``.
    var nativeGlobalNames: Dictionary<String, NativeFunctionBox>.Keys { nativeGlobals.keys }

    /// Defines (or redefines) the native global function `name`.
    func defineNativeGlobal(_ name: String, body: @escaping ([JSValue]) throws -> JSValue) {
        defineNativeGlobal(name, fast: { try body($0.values) })
    }

    /// Like ``defineNativeGlobal(_:body:)`` with the arguments read in place.
    func defineNativeGlobal(_ name: String, fast body: @escaping (NativeArguments) throws -> JSValue) {
        if let box = nativeGlobals[name] {
            box.body = body
            return
        }
        let box = NativeFunctionBox(name: name, body: body)
        nativeGlobals[name] = box
        defineGlobal(name, makeFunctionObject(box), readOnly: true)
    }

    // MARK: Entering the VM

    /// The armed entry under ``MacroEngine/enter(_:_:_:)``, the one way into JavaScript (it calls
    /// this, or ``arm(timeLimit:now:)`` and ``disarm(_:_:macro:)``, which this brackets its body
    /// with): arms the watchdog (nested entries share the outer budget), and turns a watchdog
    /// termination into a `.timeout` error.
    ///
    /// Every way into JavaScript is armed (calls, timer callbacks, file evaluation at
    /// load, converting results, whose getters and proxy traps are JavaScript too), so nothing
    /// runs unarmed. The outermost entry is also recorded in ``occupancy`` for the stall watch:
    /// the one runaway shape the watchdog cannot see (an endless chain of promise jobs, each its
    /// own VM entry on JavaScriptCore 2.50.6) shows there as an entry that never ends.
    /// `now`: the clock, when the caller just read it.
    func armed<T>(timeLimit: Duration, macro: String?, now: NIODeadline? = nil, _ body: () throws -> T) throws -> T {
        let entry = arm(timeLimit: timeLimit, now: now)
        let outcome: Result<T, any Error>
        do { outcome = .success(try body()) } catch { outcome = .failure(error) }
        return try disarm(entry, outcome, macro: macro)
    }

    /// An armed entry in progress, from ``arm(timeLimit:now:)`` to ``disarm(_:_:macro:)``.
    struct ArmedEntry {
        fileprivate let outermost: Bool
    }

    /// Begins an armed entry (see ``armed(timeLimit:macro:now:_:)``); every `arm` is followed by
    /// one ``disarm(_:_:macro:)``. `now`: the clock, when the caller just read it.
    func arm(timeLimit: Duration, now: NIODeadline? = nil) -> ArmedEntry {
        arm(nanoseconds: entryDepth == 0 ? timeLimit.nanoseconds : 0, now: now)
    }

    /// ``arm(timeLimit:now:)`` with the limit in nanoseconds (a call's turn has it so; nested
    /// entries share the outer budget and ignore it).
    func arm(nanoseconds timeLimit: Int64, now: NIODeadline? = nil) -> ArmedEntry {
        precondition(!closed, "MacroEngine used after it was shut down")
        let outermost = entryDepth == 0
        if outermost {
            let now = now ?? .now()
            watchdog.arm(nanoseconds: timeLimit, now: now)
            occupancy.begin(
                budget: UInt64(max(0, timeLimit)), call: watchdog.runningCall, owner: currentOwner,
                now: UInt64(now.uptimeNanoseconds))
        }
        entryDepth += 1
        return ArmedEntry(outermost: outermost)
    }

    /// Ends the armed entry `entry` with what its JavaScript gave: a watchdog stop becomes its
    /// error (while still armed and recorded), then the entry ends.
    func disarm<T>(_ entry: ArmedEntry, _ outcome: Result<T, any Error>, macro: String?) throws -> T {
        switch outcome {
        case .success(let value):
            try disarm(entry, failure: nil, macro: macro)
            return value
        case .failure(let error):
            try disarm(entry, failure: error, macro: macro)
            throw error  // not reached: a failed entry throws
        }
    }

    /// ``disarm(_:_:macro:)`` without the result, which the caller keeps: `failure` is the
    /// JavaScript's error, nil when it gave a result. Returns when that result stands; throws
    /// otherwise (always when `failure` is set).
    func disarm(_ entry: ArmedEntry, failure: (any Error)?, macro: String?) throws {
        defer {
            entryDepth -= 1
            if entry.outermost {
                // Still armed and recorded: the restore is an entry's JavaScript like any other.
                restoreStackLimitIfTouched()
                occupancy.end()
            }
        }
        // Stopped while JavaScriptCore drained promise jobs at the API's exit: the call then
        // returns as if nothing happened, with a value that is not the script's (measured on
        // 2.50.6: no exception, the result replaced). The run did not finish: it fails.
        guard entryDepth == 1, watchdog.fired != nil else {
            if let failure { throw failure }
            return
        }
        guard let failure else {
            throw stopError(MacroError(code: .threw, message: "JavaScript execution terminated.", macro: macro), macro: macro)
        }
        if let error = failure as? MacroError { throw stopError(error, macro: macro) }
        throw failure
    }

    /// The error a watchdog stop becomes (call only once ``Watchdog/fired`` is set): timeout,
    /// cancel or memory, at the position where the watchdog found the script, since the
    /// termination itself carries none. Also used where JavaScriptCore hands a stopped
    /// job's exception to a native callback instead of to the entry (a rejection read while
    /// promise jobs drain).
    func stopError(_ error: MacroError, macro: String?) -> MacroError {
        let code: MacroError.Code, message: String
        switch watchdog.fired {
        case .cancelled: (code, message) = (.cancelled, "cancelled")
        case .timeout, nil: (code, message) = (.timeout, "timed out after \(watchdog.armedLimit.milliseconds) ms")
        case .memory(let used):
            // Collect what the stopped macro held before anything else runs, so the next
            // macro starts from live memory only.
            watchdog.collectAfterStop(context.ref)
            let mib = { (bytes: Int) in bytes / (1 << 20) }
            (code, message) = (.memoryLimit, "stopped: the engine's memory reached \(mib(used)) MiB, over the \(mib(watchdog.memoryLimit ?? 0)) MiB limit (memory_limit_mb)")
        case .processMemory(let resident):
            watchdog.collectAfterStop(context.ref)
            let mib = { (bytes: Int) in bytes / (1 << 20) }
            (code, message) = (
                .memoryLimit,
                "stopped: the process reached \(mib(resident)) MiB, most of it grown by this macro, over 1.25 x the \(mib(watchdog.memoryLimit ?? 0)) MiB limit (memory_limit_mb)"
            )
        }
        // The innermost frame of ours, the engine's helpers left out.
        var (file, line, column, stack) = (error.file, error.line, error.column, error.stack)
        let frames = (watchdog.firedBacktrace ?? []).filter { !$0.function.hasPrefix("__macroengine_") && $0.file != nil && $0.file != "" }
        if line == nil, let located = stoppedLocation() {
            (file, line, column, stack) = (located.file, located.line, located.column, located.stack)
        } else if line == nil, let top = frames.first {
            (file, line, column) = (top.file, top.line, nil)
            stack = frames.map(\.stackLine).joined(separator: "\n")
        }
        return MacroError(
            code: code, message: message,
            macro: macro ?? error.macro, file: file, line: line, column: column, stack: stack)
    }

    /// Evaluates `source` without the watchdog bookkeeping; throws the JS exception as a MacroError.
    func evaluateRaw(_ source: String, file: String?, line: Int = 1, macro: String? = nil) throws -> JSValue {
        if let file, line == 1 { evaluatedSources[file] = (source, nil) }
        var exception: JSValueRef?
        let result: JSValueRef? = withJSString(source) { sourceRef in
            if let file {
                return withJSString(file) { JSEvaluateScript(context.ref, sourceRef, nil, $0, Int32(line), &exception) }
            }
            return JSEvaluateScript(context.ref, sourceRef, nil, nil, Int32(line), &exception)
        }
        if let exception { throw macroError(fromException: exception, macro: macro, file: file) }
        return JSValue(result ?? JSValueMakeUndefined(context.ref), in: context)
    }

    /// Checks syntax only; throws a `.syntax` error with the position.
    func checkSyntax(_ source: String, file: String?) throws {
        var exception: JSValueRef?
        let ok = withJSString(source) { sourceRef in
            withJSString(file ?? "") { fileRef in
                JSCheckScriptSyntax(context.ref, sourceRef, file == nil ? nil : fileRef, 1, &exception)
            }
        }
        if !ok {
            var error =
                exception.map { macroError(fromException: $0, macro: nil, file: file) }
                ?? MacroError(code: .syntax, message: "syntax error", file: file)
            error.code = .syntax
            if error.column == nil, let line = error.line {
                error.column = SyntaxErrorLocator.column(in: source, line: line, message: error.message) { prefix in
                    self.syntaxError(of: prefix)
                }
                if line == 1, let file, let shift = lineOneShift[file], let c = error.column { error.column = max(1, c - shift) }
            }
            throw error
        }
    }

    private func syntaxError(of source: String) -> (line: Int?, message: String)? {
        var exception: JSValueRef?
        let ok = withJSString(source) { JSCheckScriptSyntax(context.ref, $0, nil, 1, &exception) }
        guard !ok, let exception else { return nil }
        let value = JSValue(exception, in: context)
        return (value[jsString: JSNames.line.ref].number.flatMap { Int(exactly: $0) }, value[jsString: JSNames.message.ref].toString())
    }

    /// ``call(_:arguments:macro:)`` with the arguments in place (a macro call's entry passes
    /// them from the stack: no array per call).
    func call(_ function: JSObjectRef, arguments: UnsafeBufferPointer<JSValueRef?>, macro: String?) throws -> JSValue {
        var exception: JSValueRef?
        let result = JSObjectCallAsFunction(context.ref, function, nil, arguments.count, arguments.baseAddress, &exception)
        if let exception { throw macroError(fromException: exception, macro: macro, file: nil) }
        return JSValue(result ?? JSValueMakeUndefined(context.ref), in: context)
    }

    /// Calls a function with `this` = undefined.
    func call(_ function: JSObjectRef, arguments: [JSValueRef?], macro: String?) throws -> JSValue {
        var exception: JSValueRef?
        var args = arguments
        let result = args.withUnsafeMutableBufferPointer { buffer in
            JSObjectCallAsFunction(context.ref, function, nil, buffer.count, buffer.baseAddress, &exception)
        }
        if let exception { throw macroError(fromException: exception, macro: macro, file: nil) }
        return JSValue(result ?? JSValueMakeUndefined(context.ref), in: context)
    }

    // MARK: Exceptions

    /// Reads message, name, line, column, file and stack off a thrown value.
    func macroError(fromException exceptionRef: JSValueRef, macro: String?, file: String?) -> MacroError {
        let exception = JSValue(exceptionRef, in: context)
        guard exception.isObject else {
            return MacroError(code: .threw, message: exception.toString(), macro: macro, file: file)
        }
        let message = exception[jsString: JSNames.message.ref]
        let name = exception[jsString: JSNames.name.ref].string
        // Whatever a thrown object says (`throw {line: 1e300}`): only whole numbers that fit.
        var line = exception[jsString: JSNames.line.ref].number.flatMap { Int(exactly: $0) }
        var column = exception[jsString: JSNames.column.ref].number.flatMap { Int(exactly: $0) }
        let sourceURL = exception[jsString: JSNames.sourceURL.ref].string
        // The engine's own frames (the call helper) are not the macro's business.
        var stack = exception[jsString: JSNames.stack.ref].string.map { text in
            text.split(separator: "\n", omittingEmptySubsequences: false)
                .filter { !$0.hasPrefix("__macroengine_") }
                .joined(separator: "\n")
        }
        if stack?.isEmpty ?? true { noteMissingStack() }
        var errorFile = sourceURL ?? file
        // Thrown by the engine's own JavaScript (the hardened built-ins' setters, evaluated
        // without a URL): its line and column are the helper's, not the macro's. The innermost
        // frame of a file is where the macro was.
        if sourceURL == nil, let top = stack.flatMap(JSRuntime.firstFilePosition) {
            (errorFile, line, column) = (top.file, top.line, top.column)
        }
        var errorColumn = column
        if let errorFile, let shift = lineOneShift[errorFile], line == 1, let c = column { errorColumn = max(1, c - shift) }
        // Callers at the start of their calls, an async function's resume frame left out.
        stack = stack.map { StackTidy.tidy($0) { evaluatedSources[$0]?.text } }
        if !lineOneShift.isEmpty { stack = stack.map { JSRuntime.unshiftLineOne(in: $0, shifts: lineOneShift) } }
        return MacroError(
            code: name == "SyntaxError" ? .syntax : .threw,
            message: message.isUndefined ? exception.toString() : message.toString(),
            errorName: name, macro: macro, file: errorFile,
            line: line, column: errorColumn, stack: stack?.isEmpty == true ? nil : stack)
    }

    /// The file, line and column of the first stack line that names a file
    /// (`name@file:line:column` or `file:line:column`), nil when none does.
    static func firstFilePosition(in stack: String) -> (file: String, line: Int, column: Int)? {
        for frame in stack.split(separator: "\n") {
            let location = frame.split(separator: "@", maxSplits: 1).last ?? frame
            let parts = location.split(separator: ":")
            guard parts.count >= 3, let line = Int(parts[parts.count - 2]), let column = Int(parts[parts.count - 1]) else { continue }
            let file = parts.dropLast(2).joined(separator: ":")
            guard !file.isEmpty, file != "[native code]" else { continue }
            return (file, line, column)
        }
        return nil
    }

    /// Rewrites `file:1:N` to `file:1:N-SHIFT` in a stack for each file of `shifts` (see ``lineOneShift``).
    static func unshiftLineOne(in stack: String, shifts: [String: Int]) -> String {
        var stack = stack
        for (file, shift) in shifts where stack.contains(file + ":1:") { stack = unshiftLineOne(in: stack, file: file, by: shift) }
        return stack
    }

    /// Rewrites `file:1:N` to `file:1:N-shift` in a stack.
    static func unshiftLineOne(in stack: String, file: String, by shift: Int) -> String {
        let marker = file + ":1:"
        guard stack.contains(marker) else { return stack }
        var out = ""
        var rest = Substring(stack)
        while let range = rest.range(of: marker) {
            out += rest[..<range.upperBound]
            rest = rest[range.upperBound...]
            let digits = rest.prefix(while: { $0.isNumber })
            if let n = Int(digits) { out += String(max(1, n - shift)) } else { out += digits }
            rest = rest.dropFirst(digits.count)
        }
        return out + rest
    }

    // MARK: Conversion JS -> Swift

    static let maximumDepth = 256
    /// The longest array a value leaving the engine may hold (a result, an argument of a native).
    static let maximumArrayLength = 1 << 22

    /// Converts a JS value to a ``MacroValue``. Cycles, Symbols, BigInts and nesting deeper than
    /// 256 levels are `.conversion` errors naming the path to the offending value.
    func macroValue(_ value: JSValue) throws -> MacroValue {
        var path: [JSObjectRef] = []
        return try macroValue(value, path: &path, where: "value")
    }

    private func macroValue(_ value: JSValue, path: inout [JSObjectRef], where location: String) throws -> MacroValue {
        let ctx = context.ref
        switch JSValueGetType(ctx, value.ref) {
        case kJSTypeUndefined: return .undefined
        case kJSTypeNull: return .null
        case kJSTypeBoolean: return .bool(JSValueToBoolean(ctx, value.ref))
        case kJSTypeNumber: return .number(JSValueToNumber(ctx, value.ref, nil))
        case kJSTypeString: return .string(value.toString())
        case kJSTypeObject: break
        case kJSTypeSymbol: throw MacroError.conversion("cannot convert a Symbol (at \(location)) to a Swift value")
        default: throw MacroError.conversion("cannot convert a \(typeOf(value)) (at \(location)) to a Swift value")
        }
        guard let object = value.objectRef else { return .undefined }
        if JSObjectIsFunction(ctx, object) {
            guard let engine else { throw MacroError.conversion("cannot convert a function: the engine is shutting down") }
            return .function(MacroFunction(engine: engine, object: object, runtime: self))
        }
        if JSValueIsDate(ctx, value.ref) {
            let time = (try? call(value[jsString: JSNames.getTime.ref].objectRef!, this: object))?.number ?? .nan
            return .date(Date(timeIntervalSince1970: time / 1000))
        }
        if isError(value) {
            return .error(
                name: value[jsString: JSNames.name.ref].toString(),
                message: value[jsString: JSNames.message.ref].toString(),
                stack: value[jsString: JSNames.stack.ref].string.map(MacroError.hidingInternalFrames))
        }
        if path.contains(object) {
            throw MacroError.conversion("cannot convert a cyclic object: \(location) refers back to one of its parents")
        }
        if path.count >= Self.maximumDepth {
            throw MacroError.conversion("cannot convert a value nested deeper than \(Self.maximumDepth) levels (at \(location))")
        }
        path.append(object)
        defer { path.removeLast() }
        if JSValueIsArray(ctx, value.ref) {
            // A sparse array's length can be 2^32 - 1 with nothing in it: refused past the bound,
            // before anything is allocated for it.
            let length = value[jsString: JSNames.length.ref].number.flatMap { Int(exactly: $0) } ?? 0
            guard length >= 0, length <= Self.maximumArrayLength else {
                throw MacroError.conversion(
                    "cannot convert an array of \(length) elements (at \(location)): at most \(Self.maximumArrayLength) leave the engine")
            }
            var items: [MacroValue] = []
            items.reserveCapacity(Swift.min(length, 4096))
            for index in 0..<length {
                var exception: JSValueRef?
                let element = JSObjectGetPropertyAtIndex(ctx, object, UInt32(index), &exception)
                if let exception { throw conversionFailure(exception, at: "\(location)[\(index)]") }
                items.append(try macroValue(JSValue(element!, in: context), path: &path, where: "\(location)[\(index)]"))
            }
            return .array(items)
        }
        let names = JSObjectCopyPropertyNames(ctx, object)!
        defer { JSPropertyNameArrayRelease(names) }
        var result = OrderedDictionary<String, MacroValue>()
        for index in 0..<JSPropertyNameArrayGetCount(names) {
            let nameRef = JSPropertyNameArrayGetNameAtIndex(names, index)!
            let key = String(jsString: nameRef)
            var exception: JSValueRef?
            let property = JSObjectGetProperty(ctx, object, nameRef, &exception)
            if let exception { throw conversionFailure(exception, at: "\(location).\(key)") }
            result[key] = try macroValue(JSValue(property!, in: context), path: &path, where: "\(location).\(key)")
        }
        return .object(result)
    }

    private func conversionFailure(_ exception: JSValueRef, at location: String) -> MacroError {
        let thrown = macroError(fromException: exception, macro: nil, file: nil)
        return MacroError.conversion("reading \(location) threw: \(thrown.headline)")
    }

    private func call(_ function: JSObjectRef, this: JSObjectRef) throws -> JSValue {
        var exception: JSValueRef?
        let result = JSObjectCallAsFunction(context.ref, function, this, 0, nil, &exception)
        if let exception { throw macroError(fromException: exception, macro: nil, file: nil) }
        return JSValue(result!, in: context)
    }

    private lazy var errorConstructor: JSObjectRef? = context.globalObject["Error"].objectRef

    private func isError(_ value: JSValue) -> Bool {
        guard let errorConstructor else { return false }
        return JSValueIsInstanceOfConstructor(context.ref, value.ref, errorConstructor, nil)
    }

    private func typeOf(_ value: JSValue) -> String {
        (try? evaluateRaw("(function(v){return typeof v})", file: nil)).flatMap { fn in
            fn.objectRef.flatMap { try? call($0, arguments: [value.ref], macro: nil).string }
        } ?? "value"
    }

    // MARK: Conversion Swift -> JS

    /// Converts a ``MacroValue`` to a JS value of this context.
    /// `jsValue(.array(items))`: each element protected while it waits for the others
    /// (``RootedValues``: converting one may collect the ones before it).
    func jsArray(_ items: [MacroValue]) throws -> JSValue {
        let ctx = context.ref
        var values = RootedValues(ctx, capacity: items.count)
        for item in items { values.append(try jsValue(item).ref) }
        return values.withArguments { JSValue(JSObjectMakeArray(ctx, $1, $0, nil)!, in: context) }
    }

    func jsValue(_ value: MacroValue) throws -> JSValue {
        let ctx = context.ref
        switch value {
        case .undefined: return context.undefined
        case .null: return context.null
        case .bool(let b): return context.boolean(b)
        case .number(let n): return context.number(n)
        case .string(let s): return context.string(s)
        case .date(let d):
            var args: [JSValueRef?] = [JSValueMakeNumber(ctx, d.timeIntervalSince1970 * 1000)]
            return JSValue(JSObjectMakeDate(ctx, 1, &args, nil)!, in: context)
        case .error(let name, let message, _):
            return context.makeError(name, message: message)
        case .function(let function):
            guard let ref = (function as? MacroFunction)?.objectRef(in: self) else {
                throw MacroError.conversion("function '\(function.name)' belongs to another engine")
            }
            return JSValue(ref, in: context)
        case .array(let items):
            return try jsArray(items)
        case .object(let properties):
            let object = JSObjectMake(ctx, nil, nil)!
            for (key, item) in properties {
                let converted = try jsValue(item)
                withJSString(key) { JSObjectSetProperty(ctx, object, $0, converted.ref, JSPropertyAttributes(kJSPropertyAttributeNone), nil) }
            }
            return JSValue(object, in: context)
        }
    }
}

extension Duration {
    /// Whole milliseconds.
    var milliseconds: Int64 {
        components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000
    }
}
