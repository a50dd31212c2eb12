import CJavaScriptCore
import Foundation

/// What a file is, read by acorn without running any of it, and the script JavaScriptCore runs
/// for it when it is an ES module (JavaScriptCore's C API has no module loader).
///
/// - `script`: no `import` or `export` at top level: a lib script or a one-function macro file,
///   loaded as a plain script.
/// - `module`: a lib file with `import`/`export`. Its text becomes one function,
///   `(function(IMPORTS){"use strict";` + the file, with each import and `export` keyword blanked
///   + `return [{getters of the exports}, [star re-exports]];})`: every line and every column
///   after line 1 is the file's own, and line 1 is shifted by ``shift``.
/// - `macro`: a macro file with imports, or written as `export default function`: its imports,
///   then one function (a declaration, a function expression, or the default export), nothing
///   else, so loading it runs none of its code. The text is
///   `(function(IMPORTS){"use strict";return(` + the file, blanked + `\n)})`.
struct ModuleShape: Decodable, Sendable, Equatable {
    /// `script`, `module`, `macro` or `error`.
    var kind: String
    /// The script to evaluate (module and macro kinds).
    var text: String?
    /// How many characters the wrapper puts before the file's line 1.
    var shift: Int?
    /// Each `from "..."` of the file, in order.
    var imports: [Import]?
    /// The wrapper's parameters, in order: each is bound to a namespace (`imported` nil) or to
    /// one export of it.
    var params: [Param]?
    /// The names the module exports (`default` included), in source order.
    var exports: [String]?
    /// A macro's `export const triggers` and `export const mode`, as JSON text, and where the
    /// first of them is declared.
    var triggers: String?
    var mode: String?
    var dataLine: Int?
    var dataColumn: Int?
    /// For `error`: what is wrong, and where (1-based).
    var message: String?
    var line: Int?
    var column: Int?

    /// One `from "SPECIFIER"` (or `import "SPECIFIER"`), at the specifier's position.
    struct Import: Decodable, Sendable, Equatable {
        var specifier: String
        var line: Int
        var column: Int
    }

    /// A parameter of the wrapper.
    struct Param: Decodable, Sendable, Equatable {
        var name: String
        /// Index into ``ModuleShape/imports``; nil for the module's own default (`$default`).
        var module: Int?
        /// The export it reads; nil for the whole namespace.
        var imported: String?
        var line: Int
        var column: Int
    }

    /// True for a file with module syntax (a module or a macro written with imports).
    var isModuleSyntax: Bool { kind == "module" || kind == "macro" }

    /// The analysis as acorn runs it (in ``ShapeCheck``'s parser context). `kind` is `lib` or `macro`.
    static let analyzer = #"""
        (function (source, kind) {
          "use strict";
          var script = JSON.stringify({ kind: "script" });
          if (!/\b(?:import|export)\b/.test(source)) return script;
          function leadsWithModuleSyntax() {
            try {
              var tokens = acorn.tokenizer(source, { ecmaVersion: "latest", sourceType: "module" });
              var first = tokens.getToken();
              if (first.type.keyword === "export") return true;
              if (first.type.keyword === "import") { var next = tokens.getToken(); return next.type.label !== "(" && next.type.label !== "."; }
            } catch (e) {}
            return false;
          }
          function failure(message, line, column) { return JSON.stringify({ kind: "error", message: message, line: line, column: column }); }
          var ast;
          try {
            ast = acorn.parse(source, { ecmaVersion: "latest", sourceType: "module", locations: true });
          } catch (e) {
            if (!leadsWithModuleSyntax()) return script;
            var at = e.loc || {};
            var hint = kind === "macro" && /Unexpected token/.test(e.message) && at.line && /^\s*(async\s+)?function\s*\(/.test(source.split("\n")[at.line - 1].slice(0)) ?
              " (after its imports, a macro file holds one named function, `function NAME(...) {...}`, or `export default function (...) {...}`)" : "";
            return failure(String(e.message).replace(/ \(\d+:\d+\)$/, "") + hint, at.line, at.column === undefined ? undefined : at.column + 1);
          }
          if (!ast.body.some(function (s) { return /^(Import|Export)/.test(s.type); })) return script;
          // The engine runs a module as one (non-async) function: no await outside functions.
          function topLevelAwait(node) {
            if (!node || typeof node.type !== "string") return null;
            if (/Function/.test(node.type)) return null;
            if (node.type === "AwaitExpression" || (node.type === "ForOfStatement" && node.await)) return node;
            for (var key in node) {
              if (key === "loc") continue;
              var value = node[key];
              if (Array.isArray(value)) { for (var i = 0; i < value.length; i++) { var found = topLevelAwait(value[i]); if (found) return found; } }
              else if (value && typeof value.type === "string") { var hit = topLevelAwait(value); if (hit) return hit; }
            }
            return null;
          }
          var awaited = topLevelAwait(ast);
          if (awaited) return failure("top-level await is not supported in modules: await inside a function (an async function, or a macro's body)", awaited.loc.start.line, awaited.loc.start.column + 1);
          var chars = source.split("");
          function blank(from, to) {
            for (var i = from; i < to; i++) if (chars[i] !== "\n" && chars[i] !== "\r" && chars[i] !== "\u2028" && chars[i] !== "\u2029") chars[i] = " ";
          }
          function put(at, text) { for (var i = 0; i < text.length; i++) chars[at + i] = text[i]; }
          function nameOf(node) { return node.type === "Identifier" ? node.name : String(node.value); }
          function where(node) { return { line: node.loc.start.line, column: node.loc.start.column + 1 }; }
          var imports = [], params = [], getters = [], stars = [], exported = [], others = [], generated = 0, defaultExport = null;
          var data = {}, bad = null;
          function literal(node) {
            if (!node) throw null;
            switch (node.type) {
              case "Literal":
                if (node.regex || typeof node.value === "bigint") throw node;
                return node.value;
              case "ArrayExpression":
                return node.elements.map(function (e) { if (!e || e.type === "SpreadElement") throw (e || node); return literal(e); });
              case "ObjectExpression":
                var out = {};
                node.properties.forEach(function (p) {
                  if (p.type !== "Property" || p.computed || p.kind !== "init" || p.method || p.shorthand) throw p;
                  out[p.key.type === "Identifier" ? p.key.name : String(p.key.value)] = literal(p.value);
                });
                return out;
              case "TemplateLiteral":
                if (node.expressions.length) throw node;
                return node.quasis[0].value.cooked;
              case "UnaryExpression":
                if (node.operator === "-" && node.argument.type === "Literal" && typeof node.argument.value === "number") return -node.argument.value;
                throw node;
              default:
                throw node;
            }
          }
          function importOf(literal) { var at = where(literal); imports.push({ specifier: literal.value, line: at.line, column: at.column }); return imports.length - 1; }
          function param(name, module, imported, node) { var at = where(node); params.push({ name: name, module: module, imported: imported, line: at.line, column: at.column }); }
          function fresh() { return "__macroengine_m" + (generated++); }
          function exportGetter(name, expression) { exported.push(name); getters.push("get " + JSON.stringify(name) + "(){return " + expression + ";}"); }
          function declared(node, into) {
            if (!node) return into;
            switch (node.type) {
              case "Identifier": into.push(node.name); break;
              case "VariableDeclaration": node.declarations.forEach(function (d) { declared(d.id, into); }); break;
              case "FunctionDeclaration": case "ClassDeclaration": into.push(node.id.name); break;
              case "ObjectPattern": node.properties.forEach(function (p) { declared(p.type === "RestElement" ? p.argument : p.value, into); }); break;
              case "ArrayPattern": node.elements.forEach(function (e) { declared(e, into); }); break;
              case "AssignmentPattern": declared(node.left, into); break;
              case "RestElement": declared(node.argument, into); break;
            }
            return into;
          }
          ast.body.forEach(function (node) {
            var module, p;
            switch (node.type) {
              case "ImportDeclaration":
                module = importOf(node.source);
                node.specifiers.forEach(function (s) {
                  param(s.local.name, module, s.type === "ImportNamespaceSpecifier" ? null : s.type === "ImportDefaultSpecifier" ? "default" : nameOf(s.imported), s.type === "ImportSpecifier" ? s.imported : s);
                });
                blank(node.start, node.end);
                break;
              case "ExportNamedDeclaration":
                var d0 = node.declaration && node.declaration.type === "VariableDeclaration" && node.declaration.declarations.length === 1 ? node.declaration.declarations[0] : null;
                if (kind === "macro" && d0 && d0.id.type === "Identifier" && (d0.id.name === "triggers" || d0.id.name === "mode")) {
                  // Data the engine reads without running anything: a literal, or refused where it is not.
                  if (node.declaration.kind !== "const") return (bad = failure("`export const " + d0.id.name + "` must be a const", where(node).line, where(node).column));
                  try {
                    data[d0.id.name] = { value: literal(d0.init), line: where(node).line, column: where(node).column };
                  } catch (at) {
                    var spot = at && at.loc ? where(at) : where(node);
                    return (bad = failure("`export const " + d0.id.name + "` must be a literal (arrays, objects, strings, numbers, true, false, null): this part would need code to run", spot.line, spot.column));
                  }
                  blank(node.start, node.end);
                  break;
                }
                if (node.declaration) {
                  blank(node.start, node.declaration.start);
                  declared(node.declaration, []).forEach(function (n) { exportGetter(n, n); });
                  if (kind === "macro") others.push(node);
                } else if (node.source) {
                  module = importOf(node.source);
                  p = fresh();
                  param(p, module, null, node.source);
                  node.specifiers.forEach(function (s) {
                    var local = nameOf(s.local);
                    var at = where(s.local);
                    params.push({ name: fresh(), module: module, imported: local, line: at.line, column: at.column });
                    exportGetter(nameOf(s.exported), p + "[" + JSON.stringify(local) + "]");
                  });
                  blank(node.start, node.end);
                  if (kind === "macro") others.push(node);
                } else {
                  node.specifiers.forEach(function (s) { exportGetter(nameOf(s.exported), nameOf(s.local)); });
                  blank(node.start, node.end);
                  if (kind === "macro") others.push(node);
                }
                break;
              case "ExportDefaultDeclaration":
                var d = node.declaration;
                defaultExport = node;
                blank(node.start, d.start);
                if (kind === "macro") break;
                if ((d.type === "FunctionDeclaration" || d.type === "ClassDeclaration") && d.id) {
                  exportGetter("default", d.id.name);
                } else {
                  put(node.start, "$default=");
                  if (d.type === "FunctionDeclaration" || d.type === "ClassDeclaration") chars[d.end - 1] += ";";
                  params.push({ name: "$default", module: null, imported: null, line: where(node).line, column: where(node).column });
                  exportGetter("default", "$default");
                }
                break;
              case "ExportAllDeclaration":
                module = importOf(node.source);
                p = fresh();
                param(p, module, null, node.source);
                if (node.exported) exportGetter(nameOf(node.exported), p); else stars.push(p);
                blank(node.start, node.end);
                if (kind === "macro") others.push(node);
                break;
              case "EmptyStatement":
                if (kind === "macro") blank(node.start, node.end); else others.push(node);
                break;
              default:
                others.push(node);
            }
          });
          if (bad) return bad;
          var names = params.map(function (p) { return p.name; }).join(",");
          var header, trailer;
          if (kind === "macro") {
            var what = { FunctionDeclaration: "a function declaration", VariableDeclaration: "a declaration", ClassDeclaration: "a class",
                         ExpressionStatement: "a statement", ExportNamedDeclaration: "an export" };
            var body = others.filter(function (s) { return s.type !== "EmptyStatement"; });
            var fn = body[0];
            var isFunction = function (n) { return n && (n.type === "FunctionDeclaration" || n.type === "FunctionExpression" || n.type === "ArrowFunctionExpression"); };
            var single = defaultExport ? body.length === 0 && isFunction(defaultExport.declaration) :
              body.length === 1 && ((fn.type === "FunctionDeclaration" && fn.id) || (fn.type === "ExpressionStatement" && isFunction(fn.expression)));
            if (!single) {
              var named = body.filter(function (s) { return s.type === "FunctionDeclaration" && s.id; })[0];
              var bad = defaultExport && !isFunction(defaultExport.declaration) ? defaultExport.declaration :
                (defaultExport ? body[0] : body.filter(function (s) { return s !== named; })[0]);
              var at = bad ? where(bad) : { line: 1, column: 1 };
              return failure("a macro file holds its imports, one function (`function NAME(...) {...}` or `export default function (...) {...}`) and optionally `export const triggers` and `mode`, nothing else, so that loading it runs none of its code; this one has " +
                (bad ? (defaultExport && bad === defaultExport.declaration ? "a default export that is not a function" : (what[bad.type] || bad.type) + " more") : "no function") +
                " (move shared code to a module in lib/)", at.line, at.column);
            }
            if (!defaultExport && fn.type === "ExpressionStatement" && source[fn.end - 1] === ";") blank(fn.end - 1, fn.end);
            header = "(function(" + names + "){\"use strict\";return(";
            trailer = "\n)})";
          } else {
            header = "(function(" + names + "){\"use strict\";";
            trailer = "\nreturn [{" + getters.join(",") + "},[" + stars.join(",") + "]];\n})";
          }
          return JSON.stringify({ kind: kind === "macro" ? "macro" : "module", text: header + chars.join("") + trailer, shift: header.length,
                                  imports: imports, params: params, exports: exported,
                                  triggers: data.triggers ? JSON.stringify(data.triggers.value) : undefined,
                                  mode: data.mode ? JSON.stringify(data.mode.value) : undefined,
                                  dataLine: (data.triggers || data.mode || {}).line, dataColumn: (data.triggers || data.mode || {}).column });
        })
        """#
}

extension ShapeCheck {
    /// Reads `source` as a macro file (`kind` `macro`) or a lib file (`lib`): see ``ModuleShape``.
    func moduleShape(of source: String, kind: String, file: String) throws -> ModuleShape {
        let analyze = try loadedAnalyzer(file: file)
        guard let context = parserContext else { return ModuleShape(kind: "script") }
        var exception: JSValueRef?
        var arguments = RootedValues(context, capacity: 2)
        arguments.append(withJSString(source) { JSValueMakeString(context, $0) })
        arguments.append(withJSString(kind) { JSValueMakeString(context, $0) })
        let result = arguments.withArguments { JSObjectCallAsFunction(context, analyze, nil, $1, $0, &exception) }
        guard exception == nil, let text = Self.string(result, in: context) else {
            throw MacroError(code: .io, message: "cannot read the file's imports: \(Self.string(exception, in: context) ?? "no result")", file: file)
        }
        do {
            return try JSONDecoder().decode(ModuleShape.self, from: Data(text.utf8))
        } catch {
            throw MacroError(code: .io, message: "cannot read the file's imports: \(error)", file: file)
        }
    }
}
