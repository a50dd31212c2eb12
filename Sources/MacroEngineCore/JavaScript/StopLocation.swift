import CJavaScriptCore

/// One line of a JavaScriptCore `Error.stack`: `name@file:line:column`, `name@[native code]`,
/// or `file:line:column` for a function without a name.
struct StackFrame: Equatable {
    var function: String
    var file: String?
    var line: Int?
    var column: Int?

    /// Parses one stack line.
    init(stackLine raw: Substring) {
        let at = raw.firstIndex(of: "@")
        function = at.map { String(raw[..<$0]) } ?? ""
        let location = at.map { raw[raw.index(after: $0)...] } ?? raw
        let parts = location.split(separator: ":", omittingEmptySubsequences: false)
        if parts.count >= 3, let line = Int(parts[parts.count - 2]), let column = Int(parts[parts.count - 1]) {
            file = parts.dropLast(2).joined(separator: ":")
            self.line = line
            self.column = column
        } else {
            file = location.isEmpty ? nil : String(location)
        }
    }

    /// The frames of the watchdog's probe (``Watchdog/stackProbe``), innermost first, the probe's
    /// own frame and everything above it left out. Nil when the probe's frame is not there.
    static func parse(probeStack text: String) -> [StackFrame]? {
        let lines = text.split(separator: "\n")
        guard let probe = lines.firstIndex(where: { $0.hasPrefix("__macroengine_where@") }) else { return nil }
        return lines[lines.index(after: probe)...].map { StackFrame(stackLine: $0) }
    }

    /// True for a frame of macro or lib code: it has a file, and is not one of the engine's helpers.
    var isScript: Bool {
        !function.hasPrefix("__macroengine_") && line != nil && file.map { !$0.isEmpty && $0 != "[native code]" } == true
    }

    /// JavaScriptCore's own stack-line form.
    var stackLine: String {
        let location = [file, line.map(String.init), column.map(String.init)].compactMap { $0 }.joined(separator: ":")
        return function.isEmpty ? location : "\(function)@\(location)"
    }
}

extension JSRuntime {
    /// The JavaScript that ``Watchdog/stackProbe`` runs. `Error` is the one the engine started
    /// with (captured before any macro or lib file runs). JavaScriptCore takes the number of
    /// frames from an internal limit that any assignment to `Error.stackTraceLimit` sets, even
    /// one that the hardened built-ins refuse (measured: `Error.stackTraceLimit = 0` in a macro,
    /// TypeError caught, left every later stack empty), so the probe sets it for its own capture
    /// and puts back what `Error.stackTraceLimit` reads.
    static let stackProbeSource = """
        (function (E) {
          return function __macroengine_where() {
            var limit = E.stackTraceLimit;
            try { E.stackTraceLimit = 100; } catch (e) {}
            var stack = new E().stack;
            try { E.stackTraceLimit = limit; } catch (e) {}
            return stack;
          };
        })(Error)
        """

    /// Where a stopped script was, from the frames the watchdog's probe read at the stop: the
    /// file, line and column of the innermost frame of macro or lib code, and the stack (each
    /// frame `name@file:line:column`). Nil when the probe read nothing (the backtrace without
    /// columns is used then).
    ///
    /// JavaScriptCore's position for the *innermost* frame is not where it was when it stopped
    /// at a trap check: the interpreter (LLInt) does not store the bytecode offset when it
    /// handles a trap (its `slow_path_handle_traps` is `LLINT_BEGIN_NO_SET_PC`), and where the
    /// JIT does store it, the offset is a loop head's, for which no expression position is
    /// recorded, so the position found is the last expression before it in the function, or the
    /// function's own start. Callers' positions are their call sites, which are exact. So, when
    /// the innermost frame stopped in its own code (no native frame above it), its position comes
    /// from the source instead (``ShapeCheck/stoppedPosition(in:function:line:column:topName:)``):
    /// the one loop of that function when nothing can leave the loop, else the function's start.
    func stoppedLocation() -> (file: String, line: Int, column: Int?, stack: String)? {
        guard let raw = watchdog.firedStack else { return nil }
        var frames = raw.filter(\.isScript)
        guard let top = frames.first, let file = top.file, let line = top.line else { return nil }
        // A lib or module file's top level runs as an anonymous wrapper named `global code`.
        let function = top.function == "global code" && (lineOneShift[file] ?? 0) > 1 ? "" : top.function
        if raw.first == top, let column = top.column, let source = evaluatedSources[file],
            let found = try? shapeCheck?.stoppedPosition(in: source.text, function: function, line: line, column: column, topName: source.topName)
        {
            frames[0].line = found.line
            frames[0].column = found.column
            // The body an async function resumes in has no name of its own: the function's.
            if frames[0].function.isEmpty, let name = found.name { frames[0].function = name }
        }
        // Callers at the start of their calls, an async function's resume frame left out.
        frames = StackTidy.tidy(frames.map(\.stackLine).joined(separator: "\n")) { evaluatedSources[$0]?.text }
            .split(separator: "\n").map { StackFrame(stackLine: $0) }
        // Macro files run as `(` + source, modules behind a header: their line 1 is to the right.
        for index in frames.indices {
            if frames[index].line == 1, let file = frames[index].file, let shift = lineOneShift[file], let column = frames[index].column {
                frames[index].column = max(1, column - shift)
            }
        }
        return (file, frames[0].line ?? line, frames[0].column, frames.map(\.stackLine).joined(separator: "\n"))
    }
}

extension ShapeCheck {
    /// Where the function that a stop found running was, by its source (`text`, as evaluated):
    /// the function is the innermost one named `function` (`topName` names the file's top-level
    /// function expression, a macro's) whose source contains JavaScriptCore's position for the
    /// frame (`line`, `column`; always inside the function's own code), or the only one of that
    /// name. The answer is its one loop (line and column of the `while`/`for`/`do`) when the
    /// function has exactly one loop (its nested functions aside) and nothing can leave that loop:
    /// a test that is absent or `true`, and no `break`, `return`, `throw`, `await` or `yield` in
    /// it. A trap check is at each loop head and at the function's entry; a function that never
    /// leaves its only loop spends its time there. Otherwise the function's own start (its
    /// `function` keyword, or its first token). An anonymous frame may be the body that an async
    /// function or a generator resumes in; the answer then names that function. Nil when the
    /// function is not found.
    func stoppedPosition(in text: String, function: String, line: Int, column: Int, topName: String?) throws -> (line: Int, column: Int, name: String?)? {
        let locate = try loadedLocator()
        guard let context = parserContext else { return nil }
        var exception: JSValueRef?
        var arguments = RootedValues(context, capacity: 5)
        arguments.append(withJSString(text) { JSValueMakeString(context, $0) })
        arguments.append(withJSString(function) { JSValueMakeString(context, $0) })
        arguments.append(JSValueMakeNumber(context, Double(line)))
        arguments.append(JSValueMakeNumber(context, Double(column)))
        arguments.append(topName.map { name in withJSString(name) { JSValueMakeString(context, $0) } } ?? JSValueMakeNull(context))
        let result = arguments.withArguments { JSObjectCallAsFunction(context, locate, nil, $1, $0, &exception) }
        guard let result, exception == nil,
            JSValueIsObject(context, result), let object = JSValueToObject(context, result, nil)
        else { return nil }
        func number(_ name: String) -> Int? {
            guard let value = withJSString(name, { JSObjectGetProperty(context, object, $0, nil) }), JSValueIsNumber(context, value) else { return nil }
            return Int(JSValueToNumber(context, value, nil))
        }
        guard let foundLine = number("line"), let foundColumn = number("column") else { return nil }
        let name = withJSString("name") { JSObjectGetProperty(context, object, $0, nil) }
        return (foundLine, foundColumn, name.flatMap { JSValueIsString(context, $0) ? Self.string($0, in: context) : nil })
    }

    /// The locator, on acorn's AST (see ``stoppedPosition(in:function:line:column:topName:)``).
    static let locator = """
        (function (source, name, line, column, topName) {
          "use strict";
          var ast;
          try { ast = acorn.parse(source, { ecmaVersion: "latest", sourceType: "script", locations: true }); } catch (e) { return null; }
          function isFunction(n) { return n.type === "FunctionDeclaration" || n.type === "FunctionExpression" || n.type === "ArrowFunctionExpression"; }
          function isLoop(n) { return /^(While|DoWhile|For|ForIn|ForOf)Statement$/.test(n.type); }
          function children(n, visit) {
            for (var key in n) {
              if (key === "loc") continue;
              var v = n[key];
              if (Array.isArray(v)) v.forEach(function (c) { if (c && typeof c.type === "string") visit(c, n); });
              else if (v && typeof v.type === "string") visit(v, n);
            }
          }
          // A getter's or setter's frame is named by its key alone (measured: `get v()` shows `v@`).
          function keyName(p) {
            if (p.computed) return null;
            return p.key.type === "Identifier" ? p.key.name : p.key.type === "Literal" ? String(p.key.value) : null;
          }
          // The name JavaScriptCore shows (ECMAScript's SetFunctionName); null: not known here.
          function nameOf(fn, parent) {
            if (fn.id) return fn.id.name;
            if (!parent) return "";
            if (parent.type === "VariableDeclarator" && parent.init === fn) return parent.id.type === "Identifier" ? parent.id.name : null;
            if ((parent.type === "AssignmentExpression" || parent.type === "AssignmentPattern") && parent.right === fn)
              return parent.left.type === "Identifier" ? parent.left.name : null;
            if ((parent.type === "Property" || parent.type === "MethodDefinition" || parent.type === "PropertyDefinition") && parent.value === fn) return keyName(parent);
            return "";
          }
          var top = ast.body.length && ast.body[0].type === "ExpressionStatement" ? ast.body[0].expression : null;
          var functions = [];
          (function walk(n, parent, depth) {
            if (isFunction(n)) { functions.push({ node: n, name: n === top && topName !== null ? topName : nameOf(n, parent), depth: depth }); depth++; }
            children(n, function (c, p) { walk(c, p, depth); });
          })(ast, null, 0);
          function contains(n) {
            var s = n.loc.start, e = n.loc.end, c = column - 1;
            return (s.line < line || (s.line === line && s.column <= c)) && (line < e.line || (line === e.line && c < e.column));
          }
          // An async function or a generator resumes in a body of its own that has no name.
          var named = functions.filter(function (f) { return f.name === name || (name === "" && (f.node.async || f.node.generator)); });
          var holding = named.filter(function (f) { return contains(f.node); });
          var found = holding.length ? holding.reduce(function (a, b) { return b.depth > a.depth ? b : a; }) : named.length === 1 ? named[0] : null;
          if (!found) return null;
          var fn = found.node, loops = [];
          (function scan(n) {
            if (n !== fn && (isFunction(n) || n.type === "StaticBlock")) return;
            if (n.type === "PropertyDefinition") { if (n.computed) scan(n.key); return; }
            if (isLoop(n)) loops.push(n);
            children(n, scan);
          })(fn);
          var start = { line: fn.loc.start.line, column: fn.loc.start.column + 1, name: found.name };
          if (loops.length !== 1) return start;
          var loop = loops[0];
          var endless = loop.type === "ForStatement" ? !loop.test || (loop.test.type === "Literal" && loop.test.value === true)
            : (loop.type === "WhileStatement" || loop.type === "DoWhileStatement") && loop.test.type === "Literal" && loop.test.value === true;
          var leaves = false;
          (function scan(n) {
            if (leaves || (n !== loop && (isFunction(n) || n.type === "StaticBlock" || n.type === "PropertyDefinition"))) return;
            if (/^(BreakStatement|ReturnStatement|ThrowStatement|AwaitExpression|YieldExpression)$/.test(n.type)) { leaves = true; return; }
            children(n, scan);
          })(loop);
          return endless && !leaves ? { line: loop.loc.start.line, column: loop.loc.start.column + 1, name: found.name } : start;
        })
        """
}
