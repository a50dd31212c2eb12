import CJavaScriptCore
import Foundation
import Logging
import NIOCore
import Synchronization

extension DebugSession {
    /// A file of the session: a lib file (`macro` nil) or a macro.
    struct SourceFile {
        var path: String
        var source: String
        var macro: String?
    }

    /// The lib files (name order), then the macro files, of `directory`.
    static func files(of directory: String, macro: String) throws -> [SourceFile] {
        let root = normalized(directory)
        let manager = FileManager.default
        guard let names = try? manager.contentsOfDirectory(atPath: root) else {
            throw DebugError(.launchFailed, "no macros directory at \(root)")
        }
        func read(_ path: String) -> String? {
            manager.contents(atPath: path).flatMap { String(data: $0, encoding: .utf8) }
        }
        var files: [SourceFile] = []
        let lib = root + "/lib"
        for name in ((try? manager.contentsOfDirectory(atPath: lib)) ?? []).filter({ !MacroLibrary.isIgnored($0) }).sorted() {
            if let source = read(lib + "/" + name) { files.append(SourceFile(path: lib + "/" + name, source: source)) }
        }
        for name in names.filter({ !MacroLibrary.isIgnored($0) }).sorted() {
            let key = MacroLibrary.macroName(forFile: name)
            guard MacroName.isIdentifier(key), let source = read(root + "/" + name) else { continue }
            files.append(SourceFile(path: root + "/" + name, source: source, macro: key))
        }
        guard files.contains(where: { $0.macro == macro }) else {
            throw DebugError(.launchFailed, "no macro named '\(macro)' in \(root)")
        }
        return files
    }

    /// The files written as modules (a lib module, a macro with imports), by path.
    static func moduleShapes(of files: [SourceFile]) -> [String: ModuleShape] {
        let checker = ShapeCheck()
        var shapes: [String: ModuleShape] = [:]
        for file in files where file.source.contains("import") || file.source.contains("export") {
            guard let shape = try? checker.moduleShape(of: file.source, kind: file.macro == nil ? "lib" : "macro", file: file.path), shape.isModuleSyntax else { continue }
            shapes[file.path] = shape
        }
        return shapes
    }

    /// The order the engine loads them in: lib scripts, lib modules (each after what it
    /// imports), macros.
    static func loadOrder(_ files: [SourceFile], shapes: [String: ModuleShape]) -> [SourceFile] {
        let scripts = files.filter { $0.macro == nil && shapes[$0.path] == nil }
        let modules = files.filter { $0.macro == nil && shapes[$0.path] != nil }
        var edges: [String: [String]] = [:]
        for module in modules {
            edges[module.path] = (shapes[module.path]?.imports ?? []).compactMap {
                try? ModulePaths.resolve($0.specifier, from: module.path, line: $0.line, column: $0.column)
            }
        }
        let order = ModuleGraph(edges: edges).order
        let sorted = modules.sorted { (order.firstIndex(of: $0.path) ?? 0) < (order.firstIndex(of: $1.path) ?? 0) }
        return scripts + sorted + files.filter { $0.macro != nil }
    }

    /// Loads an instrumented module (`shape.text`) into the session's engine: a lib module
    /// goes live for its importers; a macro's function is returned.
    static func loadModuleFile(_ shape: ModuleShape, path: String, macro: String?, source: String, engine: MacroEngine) throws -> MacroFunction? {
        try engine.sync { runtime in
            guard let macro else {
                let module = try runtime.makeModule(path: path, source: source, shape: shape, version: 1)
                runtime.modules.begin()
                runtime.modules.stage(module)
                _ = runtime.modules.commit()
                return nil
            }
            let made = try runtime.moduleMacroFunction(shape, source: source, file: path, macro: macro)
            let function = MacroFunction(engine: engine, object: made.function.objectRef!, runtime: runtime)
            try engine.install(function, key: macro, file: path, javascript: source, imports: made.imports, runtime: runtime)
            return function
        }
    }

    /// Defines the agent (a global `const` named ``Instrumenter/Program/agent``, which is no
    /// property of the global object) with its one native (reached through the agent only), then
    /// freezes the built-ins when the session's engine hardens them: the agent replaces
    /// `Function.prototype.toString` first.
    static func installAgent(
        _ program: Instrumenter.Program, engine: MacroEngine, channel: DebugChannel, configuration: DebugConfiguration,
        budget: RunningBudget, idle: Duration, evaluateLimit: Duration, hardenBuiltins: Bool, callID: Int,
        events: @escaping @Sendable (DebugEvent) -> Void, logger: Logger
    ) throws {
        let files = MacroValue.array(program.map.files.map { .string($0) }).jsonText(pretty: false)
        let stopStart = Mutex<NIODeadlineBox?>(nil)
        let evalEnabled = engine.configuration.evalEnabled
        let native: @Sendable (NativeArguments) throws -> JSValue = { [weak engine] arguments in
            let context = arguments.context
            let op = arguments[0]?.string ?? ""
            func next() -> JSValue {
                if let command = channel.awaitCommand(idle: idle) { return context.string(command.jsonText(pretty: false)) }
                // Ended, or left stopped too long: let the macro go and stop it.
                if !channel.hasEnded { logger.notice("debug session: nobody asked anything for \(idle); it ends") }
                channel.end()
                _ = engine?.cancel(call: callID)
                return context.string("{\"op\":\"abort\"}")
            }
            switch op {
            case "poll":
                // -1: end now (terminated, or past the call deadline in running time). Checked at
                // every statement, so an endless chain of awaits (which never lets the loop run
                // the deadline's task, and which the watchdog cannot stop) ends too.
                if channel.hasEnded || budget.isExceeded() {
                    channel.end()
                    _ = engine?.cancel(call: callID)
                    return context.number(-1)
                }
                return context.number(Double(configuration.version.load(ordering: .sequentiallyConsistent)))
            case "eval":
                // On for the debugger's own evaluations only, unless the macro may eval too.
                let text = arguments[1]?.string ?? ""
                withJSString("eval and new Function are disabled in macros (config: allow_eval)") {
                    JSGlobalContextSetEvalEnabled(JSContextGetGlobalContext(context.ref), evalEnabled || text == "on", $0)
                }
                return context.undefined
            case "instrument":
                return Instrumenter.instrumentExpression(arguments[1]?.string ?? "", agent: program.agent).map { context.string($0) } ?? context.undefined
            case "bounded":
                // A request while stopped: the agent ends it at evaluateLimit (its deadline checks);
                // the watchdog's deadline is meanwhile twice that (the time stopped is not the
                // macro's running time), and the entry's own is put back after it. Past the
                // watchdog's, the request ran code the checks do not reach (a native step, code of
                // its own eval): JavaScriptCore's stop cannot be undone within the entry, so the
                // request is answered and the session ends.
                guard let function = arguments[1]?.objectRef, let watchdog = engine?.runtime.value.watchdog else { return context.undefined }
                var exception: JSValueRef?
                let (result, timedOut) = watchdog.bounded(evaluateLimit * 2) {
                    JSObjectCallAsFunction(context.ref, function, nil, 0, nil, &exception)
                }
                if timedOut {
                    let message = "this request ran \((evaluateLimit * 2).milliseconds) ms in code the debugger cannot interrupt; the session ends"
                    logger.notice("debug session: \(message)")
                    channel.answer(MacroValue.object(["error": .string(message)]).jsonText(pretty: false))
                    throw MacroError(code: .timeout, message: message)
                }
                if let exception { throw MacroError(code: .threw, message: JSValue(exception, in: context).toString()) }
                return result.map { JSValue($0, in: context) } ?? context.undefined
            case "config":
                return context.string(configuration.json())
            case "output":
                let value = (try? JSONParser.parse(arguments[1]?.string ?? "")) ?? [:]
                events(
                    .output(
                        DebugOutput(
                            category: "console", text: value["text"].stringValue ?? "",
                            file: value["file"].stringValue, line: value["line"].intValue, column: value["column"].intValue)))
                return context.undefined
            case "stopped":
                stopStart.withLock { $0 = NIODeadlineBox(.now()) }
                channel.beginStop()
                events(.stopped((try? JSONParser.parse(arguments[1]?.string ?? "")) ?? [:]))
                return next()
            case "reply":
                channel.answer(arguments[1]?.string ?? "")
                return next()
            case "resumed":
                channel.answer(arguments[1]?.string ?? "")
                channel.endStop()
                if let start = stopStart.withLock({ box -> NIODeadlineBox? in
                    defer { box = nil }; return box
                }) {
                    let nanoseconds = (NIODeadline.now() - start.deadline).nanoseconds
                    budget.addStopped(nanoseconds)
                    engine?.runtime.value.watchdog.postpone(by: .nanoseconds(nanoseconds))
                }
                return context.undefined
            default:
                throw MacroError.typeError("the debugger's native: unknown operation '\(op)'")
            }
        }
        try engine.sync { runtime in
            // The native reaches the agent's script through a global property of a name no file
            // has, deleted by that script: afterwards, only the agent holds it.
            let handOver = program.agent + "_native"
            let function = runtime.makeFunction(name: "native", fast: native)
            let global = JSContextGetGlobalObject(runtime.globalContext)
            withJSString(handOver) { JSObjectSetProperty(runtime.globalContext, global, $0, function.ref, JSPropertyAttributes(kJSPropertyAttributeDontEnum), nil) }
            let source =
                "const \(program.agent) = (" + DebugAgentScript.source + ")(globalThis.\(handOver), \(program.sitesJSON), \(program.functionsJSON), "
                + "\(program.scopesJSON), \(files), \(program.textsJSON), \"\(program.agent)\", \(evaluateLimit.milliseconds));\ndelete globalThis.\(handOver);\n"
            _ = try runtime.evaluateRaw(source, file: nil)
            if hardenBuiltins { try runtime.installLockdown() }
        }
    }
}

/// A deadline in a Mutex (NIODeadline is Sendable; the box only names it).
struct NIODeadlineBox: Sendable {
    var deadline: NIODeadline
    init(_ deadline: NIODeadline) { self.deadline = deadline }
}
