import CJavaScriptCore
import Foundation

/// Checks that a macro file is one function expression, without running any of it: a parse by
/// acorn (Debian's `node-acorn`), in a context group of its own that has nothing of the engine's
/// (no natives, no macros, no progress model). A file that only *evaluates to* a function,
/// `(globalThis.X = 1, function () {})`, an IIFE, a class whose static block runs, is refused
/// before JavaScriptCore evaluates it in the live context, so a refused save has no effect at all
/// and an accepted one runs nothing at load: evaluating a function expression only creates the
/// function.
///
/// Lives on the engine's loop with the ``JSRuntime`` that owns it (its JavaScript values never
/// leave that thread). acorn is read and evaluated on the first check (once per engine).
final class ShapeCheck {
    /// Where acorn's UMD build is (`MACROENGINE_ACORN` overrides it).
    static var acornPath: String {
        ProcessInfo.processInfo.environment["MACROENGINE_ACORN"] ?? "/usr/share/nodejs/acorn/dist/acorn.js"
    }

    /// What a check found wrong: a message, and where (line and column of the wrapped source).
    struct Finding {
        var message: String
        var line: Int?
        var column: Int?
        /// True when acorn could not parse what JavaScriptCore did (a newer syntax).
        var parserLimit = false
    }

    private var group: JSContextGroupRef?
    private var context: JSGlobalContextRef?
    private var check: JSObjectRef?
    private var locator: JSObjectRef?
    private var analyzer: JSObjectRef?
    /// ``topLevelNamesScript``, made on first use.
    var topLevelNamesRef: JSObjectRef?

    /// The parser's context (nil until acorn is loaded).
    var parserContext: JSGlobalContextRef? { context }

    /// ``locator``, evaluated beside acorn on first use.
    func loadedLocator() throws -> JSObjectRef {
        if let locator { return locator }
        _ = try loaded(file: "")
        guard let context else { throw MacroError(code: .io, message: "cannot locate a stop: no JavaScript context for the parser") }
        var exception: JSValueRef?
        let function = withJSString(Self.locator) { JSEvaluateScript(context, $0, nil, nil, 1, &exception) }
        guard exception == nil, let function, let object = JSValueToObject(context, function, nil), JSObjectIsFunction(context, object) else {
            throw MacroError(code: .io, message: "cannot locate a stop: the locator did not load (\(Self.string(exception, in: context) ?? "no function"))")
        }
        JSValueProtect(context, object)
        locator = object
        return object
    }

    /// ``ModuleShape/analyzer``, evaluated beside acorn on first use.
    func loadedAnalyzer(file: String) throws -> JSObjectRef {
        try loadedFunction(ModuleShape.analyzer, cache: &analyzer, file: file)
    }

    /// The function `script` evaluates to in acorn's context, made on first use and kept in `cache`.
    func loadedFunction(_ script: String, cache: inout JSObjectRef?, file: String) throws -> JSObjectRef {
        if let cache { return cache }
        _ = try loaded(file: file)
        guard let context else { throw MacroError(code: .io, message: "cannot read the file: no JavaScript context for the parser", file: file) }
        var exception: JSValueRef?
        let function = withJSString(script) { JSEvaluateScript(context, $0, nil, nil, 1, &exception) }
        guard exception == nil, let function, let object = JSValueToObject(context, function, nil), JSObjectIsFunction(context, object) else {
            throw MacroError(code: .io, message: "cannot read the file: a parser helper did not load (\(Self.string(exception, in: context) ?? "no function"))", file: file)
        }
        JSValueProtect(context, object)
        cache = object
        return object
    }

    deinit {
        if let context { JSGlobalContextRelease(context) }
        if let group { JSContextGroupRelease(group) }
    }

    /// Checks `wrapped` (`(` + the file + `\n)`, as the engine evaluates it): nil when it is one
    /// function expression. Throws when acorn cannot be loaded.
    func finding(in wrapped: String, file: String) throws -> Finding? {
        let check = try loaded(file: file)
        guard let context else { return nil }
        var exception: JSValueRef?
        let argument = withJSString(wrapped) { JSValueMakeString(context, $0) }
        let result = JSObjectCallAsFunction(context, check, nil, 1, [argument], &exception)
        guard exception == nil, let result, JSValueIsObject(context, result) else {
            return Finding(message: "the shape check failed: \(Self.string(exception, in: context) ?? "no result")")
        }
        let object = JSValueToObject(context, result, nil)
        func property(_ name: String) -> JSValueRef? { withJSString(name) { JSObjectGetProperty(context, object, $0, nil) } }
        guard let message = Self.string(property("message"), in: context), !JSValueIsUndefined(context, property("message")) else { return nil }
        let number = { (name: String) -> Int? in
            guard let value = property(name), JSValueIsNumber(context, value) else { return nil }
            return Int(JSValueToNumber(context, value, nil))
        }
        return Finding(
            message: message, line: number("line"), column: number("column"),
            parserLimit: property("parserLimit").map { JSValueToBoolean(context, $0) } ?? false)
    }

    private func loaded(file: String) throws -> JSObjectRef {
        if let check { return check }
        let path = Self.acornPath
        guard let data = FileManager.default.contents(atPath: path), let acorn = String(data: data, encoding: .utf8) else {
            throw MacroError(
                code: .io,
                message: "cannot check macro files: acorn is missing at \(path) (install Debian's node-acorn, or set MACROENGINE_ACORN); the file is not loaded",
                file: file)
        }
        let group = JSContextGroupCreate()
        guard let context = JSGlobalContextCreateInGroup(group, nil) else {
            JSContextGroupRelease(group)
            throw MacroError(code: .io, message: "cannot check macro files: no JavaScript context for the parser", file: file)
        }
        self.group = group
        self.context = context
        var exception: JSValueRef?
        _ = withJSString(acorn) { JSEvaluateScript(context, $0, nil, nil, 1, &exception) }
        let function = exception == nil ? withJSString(Self.checker) { JSEvaluateScript(context, $0, nil, nil, 1, &exception) } : nil
        guard exception == nil, let function, JSValueIsObject(context, function),
            let object = JSValueToObject(context, function, nil), JSObjectIsFunction(context, object)
        else {
            throw MacroError(code: .io, message: "cannot check macro files: \(path) did not load as acorn (\(Self.string(exception, in: context) ?? "no parser"))", file: file)
        }
        JSValueProtect(context, object)
        check = object
        return object
    }

    static func string(_ value: JSValueRef?, in context: JSContextRef) -> String? {
        guard let value, let text = JSValueToStringCopy(context, value, nil) else { return nil }
        defer { JSStringRelease(text) }
        return String(jsString: text)
    }

    /// The check, on acorn's AST: one expression statement (empty statements aside) whose
    /// expression is a function or arrow function.
    private static let checker = """
        (function (source) {
          "use strict";
          var ast;
          try {
            ast = acorn.parse(source, { ecmaVersion: "latest", sourceType: "script", locations: true });
          } catch (e) {
            var at = e.loc || {};
            return { message: String(e.message).replace(/ \\(\\d+:\\d+\\)$/, ""), line: at.line, column: at.column === undefined ? undefined : at.column + 1, parserLimit: true };
          }
          var statements = ast.body.filter(function (s) { return s.type !== "EmptyStatement"; });
          var first = statements[0];
          if (statements.length === 1 && first.type === "ExpressionStatement" &&
              (first.expression.type === "FunctionExpression" || first.expression.type === "ArrowFunctionExpression")) return {};
          var names = {
            SequenceExpression: "a sequence (comma) expression", CallExpression: "a call", NewExpression: "a `new` expression",
            AssignmentExpression: "an assignment", ClassExpression: "a class", ConditionalExpression: "a conditional expression",
            LogicalExpression: "a logical expression", BinaryExpression: "a binary expression", MemberExpression: "a property access",
            TaggedTemplateExpression: "a tagged template", AwaitExpression: "an await", YieldExpression: "a yield",
            ObjectExpression: "an object literal", ArrayExpression: "an array literal", Identifier: "a name", Literal: "a literal",
            UnaryExpression: "a unary expression", UpdateExpression: "an update expression", ImportExpression: "an import()"
          };
          var node = statements.length === 1 && first.type === "ExpressionStatement" ? first.expression : (statements[1] || first);
          var what = node ? (names[node.type] || node.type) : "nothing";
          if (node && node.type === "Literal")
            what = "a " + (node.regex ? "regular expression" : node.value === null ? "null" : typeof node.value) + " literal";
          return { message: "a macro file must hold one function expression, e.g. function() { ... }; this one is " + what +
                   " (nothing of it was run)", line: node && node.loc.start.line, column: node && node.loc.start.column + 1 };
        })
        """
}
