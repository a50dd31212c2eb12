import CJavaScriptCore
import Foundation

/// Rewrites macro and lib files for a debug session: acorn (Debian's `node-acorn`, as
/// ``ShapeCheck`` uses it) parses each file in a JavaScriptCore context group of its own, and
/// ``InstrumenterScript`` inserts the hooks. The group is created, used and released within
/// ``instrument(_:)`` on the calling thread, so none of its values outlives the call.
enum Instrumenter {
    /// One file to instrument.
    struct File: Sendable {
        /// Its path, as stack frames and breakpoints name it.
        var path: String
        /// Its text as on disk.
        var source: String
        /// The macro it defines (names its function when that has no name of its own); nil for a lib file.
        var macro: String?
        /// Columns a wrapper puts before the file's line 1 in ``source`` (a module's text, see
        /// ``ModuleShape``); 0 for a file as on disk.
        var lineOneShift = 0
    }

    /// Every file of a session, rewritten, with the tables that map hooks back to them.
    struct Program: Sendable {
        /// The rewritten sources, in the order given.
        var code: [String]
        /// The source map: sites, functions, scopes.
        var map: SourceMap
        /// The files instrumented, in the order given (a file that does not parse is left out,
        /// unless it is the one required).
        var files: [File]
        /// The files left out, each with its parse error at `line:column` (1-based).
        var skipped: [(path: String, message: String)]
        /// The name of the agent's binding: `__dbg` and a random suffix that no file's text or
        /// macro's name contains, so no parameter, variable or macro of the user's can shadow or
        /// reach the agent by name (the hooks' own names, `NAME_f`, `NAME_e`, `NAME_x`, start with it).
        var agent: String
        /// The tables as JSON text (sites, functions, scopes), for ``DebugAgentScript``.
        var sitesJSON: String
        var functionsJSON: String
        var scopesJSON: String
        /// Per file, for `Function.prototype.toString`: `{out, orig, edits}` (the text as the engine
        /// holds it, the text it came from, and each insertion as offset and length in `out`).
        var textsJSON: String
    }

    /// Instruments `files`. A file that does not parse is left out and listed in
    /// ``Program/skipped``, as the engine skips it; throws ``DebugError`` (`launchFailed`) when
    /// acorn is missing or the file at `required` does not parse.
    static func instrument(_ files: [File], required: String? = nil) throws -> Program {
        let path = ShapeCheck.acornPath
        guard let data = FileManager.default.contents(atPath: path), let acorn = String(data: data, encoding: .utf8) else {
            throw DebugError(.launchFailed, "cannot debug: acorn is missing at \(path) (install Debian's node-acorn, or set MACROENGINE_ACORN)")
        }
        let group = JSContextGroupCreate()
        defer { JSContextGroupRelease(group) }
        guard let context = JSGlobalContextCreateInGroup(group, nil) else {
            throw DebugError(.launchFailed, "cannot debug: no JavaScript context for the parser")
        }
        defer { JSGlobalContextRelease(context) }
        var exception: JSValueRef?
        _ = withJSString(acorn) { JSEvaluateScript(context, $0, nil, nil, 1, &exception) }
        let agent = agentName(for: files)
        let function =
            exception == nil
            ? withJSString(InstrumenterScript.source.replacingOccurrences(of: "__dbg", with: agent)) { JSEvaluateScript(context, $0, nil, nil, 1, &exception) } : nil
        guard exception == nil, let function, let object = JSValueToObject(context, function, nil), JSObjectIsFunction(context, object) else {
            throw DebugError(.launchFailed, "cannot debug: \(path) did not load as acorn (\(text(exception, context) ?? "no parser"))")
        }
        var code: [String] = []
        var sites: [MacroValue] = [], functions: [MacroValue] = [], scopes: [MacroValue] = [], texts: [MacroValue] = []
        var kept: [File] = [], skipped: [(path: String, message: String)] = []
        for file in files {
            let index = kept.count
            let bases = "{\"site\":\(sites.count),\"fn\":\(functions.count),\"scope\":\(scopes.count)}"
            // Each argument protected as it is made: making the next one may collect it.
            var arguments = RootedValues(context, capacity: 5)
            arguments.append(withJSString(file.source) { JSValueMakeString(context, $0) })
            arguments.append(JSValueMakeNumber(context, Double(index)))
            arguments.append(withJSString(bases) { JSValueMakeFromJSONString(context, $0) } ?? JSValueMakeNull(context))
            arguments.append(file.macro.map { name in withJSString(name) { JSValueMakeString(context, $0) } } ?? JSValueMakeNull(context))
            arguments.append(JSValueMakeNumber(context, Double(file.lineOneShift)))
            exception = nil
            let result = arguments.withArguments { JSObjectCallAsFunction(context, object, nil, $1, $0, &exception) }
            guard exception == nil, let result, let json = jsonText(result, context) else {
                let message = text(exception, context) ?? "the instrumenter gave nothing"
                if file.path == required { throw DebugError(.launchFailed, "cannot debug \(file.path): \(message)") }
                skipped.append((file.path, message))
                continue
            }
            let value: MacroValue
            do { value = try JSONParser.parse(json, maximumDepth: 4096) } catch {
                throw DebugError(.launchFailed, "cannot debug \(file.path): \(error)")
            }
            kept.append(file)
            code.append(value["code"].stringValue ?? "")
            sites += value["sites"].arrayValue ?? []
            functions += value["functions"].arrayValue ?? []
            scopes += value["scopes"].arrayValue ?? []
            texts.append(["out": value["out"], "orig": value["orig"], "edits": value["edits"]])
        }
        let map = SourceMap(files: kept.map(\.path), sites: sites, functions: functions)
        return Program(
            code: code, map: map, files: kept, skipped: skipped, agent: agent,
            sitesJSON: MacroValue.array(sites).jsonText(pretty: false),
            functionsJSON: MacroValue.array(functions).jsonText(pretty: false),
            scopesJSON: MacroValue.array(scopes).jsonText(pretty: false),
            textsJSON: MacroValue.array(texts).jsonText(pretty: false))
    }

    /// `expression` with a check of the request's deadline in every loop and function of its
    /// own (``InstrumenterScript/expressionSource``); nil when it does not parse (the engine then
    /// reports the error) or acorn is missing. An expression with neither a loop nor a function
    /// is returned as it is, without loading the parser.
    static func instrumentExpression(_ expression: String, agent: String) -> String? {
        guard expression.range(of: #"\b(for|while|do|function)\b|=>"#, options: .regularExpression) != nil else { return expression }
        guard let data = FileManager.default.contents(atPath: ShapeCheck.acornPath), let acorn = String(data: data, encoding: .utf8) else { return nil }
        let group = JSContextGroupCreate()
        defer { JSContextGroupRelease(group) }
        guard let context = JSGlobalContextCreateInGroup(group, nil) else { return nil }
        defer { JSGlobalContextRelease(context) }
        var exception: JSValueRef?
        _ = withJSString(acorn) { JSEvaluateScript(context, $0, nil, nil, 1, &exception) }
        guard exception == nil, let function = withJSString(InstrumenterScript.expressionSource, { JSEvaluateScript(context, $0, nil, nil, 1, &exception) }),
            exception == nil, let object = JSValueToObject(context, function, nil)
        else { return nil }
        var arguments = RootedValues(context, capacity: 2)
        arguments.append(withJSString(expression) { JSValueMakeString(context, $0) })
        arguments.append(withJSString(agent) { JSValueMakeString(context, $0) })
        let result = arguments.withArguments { JSObjectCallAsFunction(context, object, nil, $1, $0, &exception) }
        guard exception == nil, let result else { return nil }
        return text(result, context)
    }

    /// `__dbg` and a random suffix that no file's text or macro's name has: never `__dbg` itself,
    /// which code could name without writing it (`globalThis["__" + "dbg"]`).
    static func agentName(for files: [File]) -> String {
        var name: String
        repeat {
            name = "__dbg" + String(UInt64.random(in: 1 ... .max), radix: 36)
        } while files.contains(where: { $0.source.contains(name) || ($0.macro ?? "").hasPrefix(name) })
        return name
    }

    private static func text(_ value: JSValueRef?, _ context: JSContextRef) -> String? {
        guard let value, let string = JSValueToStringCopy(context, value, nil) else { return nil }
        defer { JSStringRelease(string) }
        return String(jsString: string)
    }

    private static func jsonText(_ value: JSValueRef, _ context: JSContextRef) -> String? {
        guard let string = JSValueCreateJSONString(context, value, 0, nil) else { return nil }
        defer { JSStringRelease(string) }
        return String(jsString: string)
    }
}
