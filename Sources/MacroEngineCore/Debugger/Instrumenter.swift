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
    }

    /// Every file of a session, rewritten, with the tables that map hooks back to them.
    struct Program: Sendable {
        /// The rewritten sources, in the order given.
        var code: [String]
        /// The source map: sites, functions, scopes.
        var map: SourceMap
        /// The tables as JSON text (sites, functions, scopes), for ``DebugAgentScript``.
        var sitesJSON: String
        var functionsJSON: String
        var scopesJSON: String
    }

    /// Instruments `files`. Throws ``DebugError`` (`launchFailed`) when acorn is missing or a
    /// file does not parse.
    static func instrument(_ files: [File]) throws -> Program {
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
        let function =
            exception == nil
            ? withJSString(InstrumenterScript.source) { JSEvaluateScript(context, $0, nil, nil, 1, &exception) } : nil
        guard exception == nil, let function, let object = JSValueToObject(context, function, nil), JSObjectIsFunction(context, object) else {
            throw DebugError(.launchFailed, "cannot debug: \(path) did not load as acorn (\(text(exception, context) ?? "no parser"))")
        }
        var code: [String] = []
        var sites: [MacroValue] = [], functions: [MacroValue] = [], scopes: [MacroValue] = []
        for (index, file) in files.enumerated() {
            let bases = "{\"site\":\(sites.count),\"fn\":\(functions.count),\"scope\":\(scopes.count)}"
            let arguments: [JSValueRef?] = [
                withJSString(file.source) { JSValueMakeString(context, $0) },
                JSValueMakeNumber(context, Double(index)),
                withJSString(bases) { JSValueMakeFromJSONString(context, $0) },
                file.macro.map { name in withJSString(name) { JSValueMakeString(context, $0) } } ?? JSValueMakeNull(context),
            ]
            exception = nil
            let result = JSObjectCallAsFunction(context, object, nil, arguments.count, arguments, &exception)
            guard exception == nil, let result, let json = jsonText(result, context) else {
                throw DebugError(.launchFailed, "cannot debug \(file.path): \(text(exception, context) ?? "the instrumenter gave nothing")")
            }
            let value: MacroValue
            do { value = try JSONParser.parse(json, maximumDepth: 4096) } catch {
                throw DebugError(.launchFailed, "cannot debug \(file.path): \(error)")
            }
            code.append(value["code"].stringValue ?? "")
            sites += value["sites"].arrayValue ?? []
            functions += value["functions"].arrayValue ?? []
            scopes += value["scopes"].arrayValue ?? []
        }
        let map = SourceMap(files: files.map(\.path), sites: sites, functions: functions)
        return Program(
            code: code, map: map,
            sitesJSON: MacroValue.array(sites).jsonText(pretty: false),
            functionsJSON: MacroValue.array(functions).jsonText(pretty: false),
            scopesJSON: MacroValue.array(scopes).jsonText(pretty: false))
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
