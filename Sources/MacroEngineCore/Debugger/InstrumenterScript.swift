/// The instrumenter, run by acorn's context (``Instrumenter``): `(source, fileIndex, bases, macroName)` gives
/// the source with a hook before each statement of each function (on the same line, so lines are
/// unchanged), each function's frame recorded, and each `await` marked; and the tables that map
/// hooks back to the file: sites `[line, column, function, scope, inTry, file]` (1-based),
/// functions `[name, line, column, file]`, scopes `{names, parent, fn}`; and, for
/// `Function.prototype.toString`, the text as JavaScriptCore holds it (`out`), the text it came
/// from (`orig`), and each insertion as `[offset in out, length]` pairs (`edits`).
///
/// A function's frame is recorded in one of two forms:
/// - *wrapped*: its body in `try { ... } catch { report; rethrow } finally { leave }`, so that an
///   exception stops where it is thrown;
/// - *plain*, where a block would change what the body means: a strict function (neither async
///   nor a generator) with a call in tail position (a `try` would make it an ordinary call, and
///   a deep tail recursion would overflow), or a body whose function declarations a block refuses
///   (`var x; function x(){}`, the same function declared twice). Each `return` then leaves the
///   frame (`return __dbg.l(__dbg_f, (value))`), one in tail position leaves it before the call
///   (`__dbg.t(__dbg_f); return f(...)`), and the end of the body leaves it; a frame an exception
///   ends is found ended by the next hook of a caller. A `throw` of its own reports what it
///   throws (`throw __dbg.w(__dbg_f, (value))`).
///
/// The body of a `with` statement (and any function in it) is not instrumented: every name looked
/// up there is first asked of the `with`'s object, which would see the agent's names.
enum InstrumenterScript {
    /// The JavaScript source: one function expression.
    static let source = #"""
        (function (source, file, base, macroName, headerShift) {
          "use strict";
          // A macro file is one function expression, evaluated as `(FILE\n)` (trailing blanks and
          // one `;` dropped, as the engine does): parsed the same way, so that `function () {}`
          // parses; positions on its first line are one column to the right, and are moved back.
          var shift = 0, wrapped = false;
          if (macroName !== null && macroName !== undefined) {
            source = source.replace(/\s+$/, "").replace(/;$/, "");
            source = "(" + source + "\n)";
            shift = 1;
            wrapped = true;
          }
          // A module's text, as the engine wraps it: its line 1 is behind the wrapper's header.
          shift += headerShift || 0;
          function column(loc) { return loc.column + 1 - (loc.line === 1 ? shift : 0); }
          var ast;
          try {
            ast = acorn.parse(source, { ecmaVersion: "latest", sourceType: "script", locations: true, preserveParens: true, allowReturnOutsideFunction: false });
          } catch (e) {
            // acorn's columns are 0-based; every position the engine reports is 1-based.
            if (e && e.loc) throw new SyntaxError(String(e.message).replace(/ \(\d+:\d+\)$/, "") + " (" + e.loc.line + ":" + column(e.loc) + ")");
            throw e;
          }
          var edits = [];
          var seq = 0;
          function put(pos, text) { edits.push({ pos: pos, text: text, seq: seq++ }); }
          var sites = [], functions = [], scopes = [];
          // Scope: { names: [], parent: id|-1, fn: bool }
          function newScope(parent, isFn) { scopes.push({ names: [], parent: parent, fn: isFn }); return base.scope + scopes.length - 1; }
          function scopeOf(id) { return scopes[id - base.scope]; }
          function patternNames(p, out) {
            if (!p) return out;
            switch (p.type) {
              case "Identifier": out.push(p.name); break;
              case "ObjectPattern": p.properties.forEach(function (q) { patternNames(q.type === "RestElement" ? q.argument : q.value, out); }); break;
              case "ArrayPattern": p.elements.forEach(function (q) { patternNames(q, out); }); break;
              case "RestElement": patternNames(p.argument, out); break;
              case "AssignmentPattern": patternNames(p.left, out); break;
              case "ParenthesizedExpression": patternNames(p.expression, out); break;
            }
            return out;
          }
          function addNames(scope, names) {
            var s = scopeOf(scope);
            names.forEach(function (n) { if (s.names.indexOf(n) < 0 && n.indexOf("__dbg") !== 0) s.names.push(n); });
          }
          // Lexical declarations directly in a statement list.
          function lexicalNames(list) {
            var out = [];
            list.forEach(function (s) {
              if (s.type === "VariableDeclaration" && s.kind !== "var") s.declarations.forEach(function (d) { patternNames(d.id, out); });
              else if (s.type === "ClassDeclaration" && s.id) out.push(s.id.name);
              else if (s.type === "FunctionDeclaration" && s.id) out.push(s.id.name);
            });
            return out;
          }
          // var declarations of a function body (not of nested functions).
          function varNames(node, out) {
            if (!node || typeof node.type !== "string") return out;
            if (node.type === "VariableDeclaration" && node.kind === "var") node.declarations.forEach(function (d) { patternNames(d.id, out); });
            if (isFunction(node)) return out;
            for (var key in node) {
              if (key === "loc") continue;
              var v = node[key];
              if (Array.isArray(v)) v.forEach(function (c) { if (c && typeof c.type === "string") varNames(c, out); });
              else if (v && typeof v.type === "string") varNames(v, out);
            }
            return out;
          }
          function isFunction(n) { return n.type === "FunctionDeclaration" || n.type === "FunctionExpression" || n.type === "ArrowFunctionExpression"; }
          function hasUseStrict(list) {
            for (var i = 0; i < list.length && list[i].directive !== undefined; i++) if (list[i].directive === "use strict") return true;
            return false;
          }
          // A call in tail position of an expression (ECMA-262 HasCallInTailPosition).
          function tailCall(e) {
            if (!e) return false;
            switch (e.type) {
              case "CallExpression": return e.callee.type !== "Super";
              case "TaggedTemplateExpression": return true;
              case "ChainExpression": case "ParenthesizedExpression": return tailCall(e.expression);
              case "ConditionalExpression": return tailCall(e.consequent) || tailCall(e.alternate);
              case "LogicalExpression": return tailCall(e.right);
              case "SequenceExpression": return tailCall(e.expressions[e.expressions.length - 1]);
            }
            return false;
          }
          // Whether a return of the function's own (not of a nested function) has a call in tail position.
          function returnsTailCall(node) {
            if (!node || typeof node.type !== "string") return false;
            if (node.type === "ReturnStatement") return tailCall(node.argument);
            if (isFunction(node) || node.type === "ClassDeclaration" || node.type === "ClassExpression") return false;
            for (var key in node) {
              if (key === "loc") continue;
              var v = node[key];
              if (Array.isArray(v)) { for (var i = 0; i < v.length; i++) if (v[i] && returnsTailCall(v[i])) return true; }
              else if (v && typeof v.type === "string" && returnsTailCall(v)) return true;
            }
            return false;
          }
          // Declarations a block refuses but a function body takes: a function declared twice at
          // the top of the body, or with the name of a var of the function.
          function blockRefuses(node) {
            var declared = [], refused = false;
            node.body.body.forEach(function (s) {
              if (s.type !== "FunctionDeclaration" || !s.id) return;
              if (declared.indexOf(s.id.name) >= 0) refused = true;
              declared.push(s.id.name);
            });
            if (refused || !declared.length) return refused;
            var vars = varNames(node.body, []);
            return declared.some(function (n) { return vars.indexOf(n) >= 0; });
          }

          var hookText = function (site) { return "__dbg.h(__dbg_f," + site + ",(__dbg_e)=>eval(__dbg_e));"; };
          function addSite(node, fn, scope, inTry) {
            sites.push([node.loc.start.line, column(node.loc.start), fn, scope, inTry ? 1 : 0, file]);
            return base.site + sites.length - 1;
          }

          // ctx: { fn: id or -1, scope: id, inTry: bool, strict: bool, bare: bool (in a with: nothing
          // instrumented), plain: bool (the function's frame is plain), tail: bool (its calls in tail
          // position are proper tail calls) }
          function derive(ctx, scope, inTry, guarded) {
            return { fn: ctx.fn, scope: scope, inTry: inTry, strict: ctx.strict, bare: ctx.bare, plain: ctx.plain, tail: ctx.tail && !guarded };
          }
          function visit(node, ctx, parent, key) {
            if (!node || typeof node.type !== "string") return;
            if (isFunction(node)) return visitFunction(node, ctx, parent, key);
            switch (node.type) {
              case "BlockStatement": {
                var scope = newScope(ctx.scope, false);
                addNames(scope, lexicalNames(node.body));
                return statementList(node.body, derive(ctx, scope, ctx.inTry));
              }
              case "SwitchStatement": {
                visit(node.discriminant, ctx);
                var sscope = newScope(ctx.scope, false);
                var all = [];
                node.cases.forEach(function (c) { all = all.concat(c.consequent); });
                addNames(sscope, lexicalNames(all));
                var sctx = derive(ctx, sscope, ctx.inTry);
                node.cases.forEach(function (c) { visit(c.test, sctx); statementList(c.consequent, sctx); });
                return;
              }
              case "TryStatement": {
                // No call is in tail position inside a try block, nor in a catch clause a finally follows.
                visit(node.block, derive(ctx, ctx.scope, ctx.inTry || !!node.handler, true));
                if (node.handler) {
                  var h = node.handler;
                  var cscope = newScope(ctx.scope, false);
                  addNames(cscope, patternNames(h.param, []));
                  if (ctx.fn >= 0) put(h.body.start + 1, "__dbg.c(__dbg_f," + (h.param && h.param.type === "Identifier" ? h.param.name : "undefined") + ");");
                  visit(h.body, derive(ctx, cscope, ctx.inTry, !!node.finalizer));
                }
                if (node.finalizer) visit(node.finalizer, ctx);
                return;
              }
              case "ForStatement": case "ForInStatement": case "ForOfStatement": {
                var fscope = ctx.scope;
                var decl = node.init || node.left;
                if (decl && decl.type === "VariableDeclaration" && decl.kind !== "var") {
                  fscope = newScope(ctx.scope, false);
                  decl.declarations.forEach(function (d) { addNames(fscope, patternNames(d.id, [])); });
                }
                var fctx = derive(ctx, fscope, ctx.inTry);
                ["init", "test", "update", "left", "right"].forEach(function (k) { if (node[k]) visit(node[k], fctx); });
                return body(node.body, fctx);
              }
              case "WhileStatement": visit(node.test, ctx); return body(node.body, ctx);
              case "DoWhileStatement": body(node.body, ctx); return visit(node.test, ctx);
              case "IfStatement":
                visit(node.test, ctx); body(node.consequent, ctx);
                if (node.alternate) body(node.alternate, ctx);
                return;
              case "WithStatement":
                // Not instrumented: the object would see every name the hooks look up.
                visit(node.object, ctx);
                return visit(node.body, { fn: -1, scope: ctx.scope, inTry: ctx.inTry, strict: false, bare: true });
              case "ClassDeclaration": case "ClassExpression":
                return children(node, { fn: ctx.fn, scope: ctx.scope, inTry: ctx.inTry, strict: true, bare: ctx.bare, plain: ctx.plain, tail: ctx.tail });
              case "ReturnStatement":
                if (ctx.fn >= 0 && ctx.plain) {
                  if (!node.argument) { put(node.start, "__dbg.l(__dbg_f);"); return; }
                  if (ctx.tail && tailCall(node.argument)) { put(node.start, "__dbg.t(__dbg_f);"); break; }
                  put(node.argument.start, "__dbg.l(__dbg_f,(");
                  visit(node.argument, ctx);
                  put(node.argument.end, "))");
                  return;
                }
                break;
              case "ThrowStatement":
                // A plain frame has no catch that sees an exception leave it: a throw of its own
                // reports what it throws (one a native function throws is seen by a wrapped caller).
                if (ctx.fn >= 0 && ctx.plain) {
                  put(node.argument.start, "__dbg.w(__dbg_f,(");
                  visit(node.argument, ctx);
                  put(node.argument.end, "))");
                  return;
                }
                break;
              case "LabeledStatement": return visit(node.body, ctx);
              case "AwaitExpression":
                if (ctx.fn >= 0) {
                  put(node.start, "__dbg.r(__dbg_f,");
                  put(node.argument.start, "__dbg.s(__dbg_f,");
                  visit(node.argument, ctx);
                  put(node.argument.end, ")");
                  put(node.end, ")");
                  return;
                }
                break;
            }
            children(node, ctx);
          }
          function children(node, ctx) {
            for (var key in node) {
              if (key === "loc" || key === "type") continue;
              var v = node[key];
              if (Array.isArray(v)) v.forEach(function (c) { visit(c, ctx, node, key); });
              else if (v && typeof v.type === "string") visit(v, ctx, node, key);
            }
          }
          // A statement in a single-statement position: wrapped in braces with its hook.
          function body(stmt, ctx) {
            if (stmt.type === "BlockStatement" || ctx.fn < 0) return visit(stmt, ctx);
            put(stmt.start, "{");
            statementList([stmt], ctx);
            put(stmt.end, "}");
          }
          function statementList(list, ctx) {
            list.forEach(function (s) {
              if (ctx.fn >= 0 && s.type !== "FunctionDeclaration" && s.type !== "EmptyStatement" && !s.directive) {
                put(s.start, hookText(addSite(s, ctx.fn, ctx.scope, ctx.inTry)));
              }
              visit(s, ctx);
            });
          }
          function functionName(node, parent, key) {
            if (node.id) return node.id.name;
            if (parent) {
              if (parent.type === "VariableDeclarator" && parent.id.type === "Identifier") return parent.id.name;
              if ((parent.type === "Property" || parent.type === "MethodDefinition" || parent.type === "PropertyDefinition") && key === "value")
                return parent.key.type === "Identifier" ? parent.key.name : String(parent.key.value);
              if (parent.type === "AssignmentExpression" && parent.left.type === "Identifier") return parent.left.name;
            }
            return "(anonymous)";
          }
          function visitFunction(node, ctx, parent, key) {
            if (ctx.bare) return children(node, ctx);
            // A macro file's own function, when it has no name, is named after the file.
            var name = ctx.fn < 0 && !node.id && macroName ? macroName : functionName(node, parent, key);
            functions.push([name, node.loc.start.line, column(node.loc.start), file]);
            var fn = base.fn + functions.length - 1;
            var scope = newScope(ctx.scope, true);
            var names = [];
            node.params.forEach(function (p) { patternNames(p, names); });
            addNames(scope, names);
            var block = node.body.type === "BlockStatement";
            var strict = ctx.strict || (block && hasUseStrict(node.body.body));
            // Proper tail calls: strict code, not in an async function or a generator.
            var tail = strict && !node.async && !node.generator;
            var plain = (tail && (block ? returnsTailCall(node.body) : tailCall(node.body))) || (block && blockRefuses(node));
            var fctx = { fn: fn, scope: scope, inTry: false, strict: strict, bare: false, plain: plain, tail: tail };
            node.params.forEach(function (p) { visit(p, { fn: ctx.fn, scope: ctx.scope, inTry: ctx.inTry, strict: strict, bare: false, plain: ctx.plain, tail: ctx.tail }); });
            var prologue = "const __dbg_f=__dbg.e(" + fn + ");" + (plain ? "" : "try{");
            var epilogue = plain ? "__dbg.l(__dbg_f);" : "}catch(__dbg_x){__dbg.x(__dbg_f,__dbg_x);throw __dbg_x;}finally{__dbg.l(__dbg_f);}";
            if (block) {
              addNames(scope, varNames(node.body, []));
              addNames(scope, lexicalNames(node.body.body));
              var stmts = node.body.body;
              var i = 0;
              while (i < stmts.length && stmts[i].directive) i++;
              // After the directives: a `;` first, since the last may have none (`"use strict"` then
              // a newline), and the prologue on the same line would otherwise continue it.
              put(i > 0 ? stmts[i - 1].end : node.body.start + 1, (i > 0 ? ";" : "") + prologue);
              statementList(stmts, fctx);
              put(node.body.end - 1, epilogue);
            } else {
              var site = addSite(node.body, fn, scope, false);
              if (plain) {
                // A call in tail position: the frame is left before it, and nothing wraps it.
                put(node.body.start, "{" + prologue + hookText(site) + "__dbg.t(__dbg_f);return (");
                visit(node.body, fctx);
                put(node.body.end, ");}");
              } else {
                put(node.body.start, "{" + prologue + hookText(site) + "return (");
                visit(node.body, fctx);
                put(node.body.end, ");" + epilogue + "}");
              }
            }
          }
          var scriptStrict = !wrapped && hasUseStrict(ast.body);
          ast.body.forEach(function (s) { visit(s, { fn: -1, scope: -1, inTry: false, strict: scriptStrict, bare: false, plain: false, tail: false }); });
          edits.sort(function (a, b) { return a.pos - b.pos || a.seq - b.seq; });
          var out = "", at = 0, inserted = [];
          edits.forEach(function (e) {
            out += source.slice(at, e.pos);
            inserted.push(out.length, e.text.length);
            out += e.text;
            at = e.pos;
          });
          out += source.slice(at);
          // The macro's text as the engine evaluates it is `(CODE\n)`: `out` and `orig` are so, and
          // `code` is what goes between.
          return { code: wrapped ? out.slice(1, out.length - 2) : out, out: out, orig: source, edits: inserted, sites: sites, functions: functions, scopes: scopes };
        })
        """#

    /// An expression the debugger evaluates while stopped, `(source, agent)`: a check of the
    /// request's deadline (`__dbg.k()`, which throws past it) at the start of every loop's body
    /// and of every function's, so that a loop of the expression's own ends with the request.
    static let expressionSource = #"""
        (function (source, agent) {
          "use strict";
          var ast = acorn.parse(source, { ecmaVersion: "latest", sourceType: "script" });
          var edits = [], check = agent + ".k();";
          function put(pos, text) { edits.push({ pos: pos, text: text, seq: edits.length }); }
          function isFunction(n) { return n.type === "FunctionDeclaration" || n.type === "FunctionExpression" || n.type === "ArrowFunctionExpression"; }
          function walk(node) {
            if (!node || typeof node.type !== "string") return;
            var loop = /^(For|ForIn|ForOf|While|DoWhile)Statement$/.test(node.type);
            var close = null;
            if (loop && node.body.type === "BlockStatement") put(node.body.start + 1, check);
            else if (loop) { put(node.body.start, "{" + check); close = [node.body.end, "}"]; }
            else if (isFunction(node) && node.body.type === "BlockStatement") {
              var list = node.body.body, i = 0;
              while (i < list.length && list[i].directive !== undefined) i++;
              put(i > 0 ? list[i - 1].end : node.body.start + 1, (i > 0 ? ";" : "") + check);
            } else if (isFunction(node)) { put(node.body.start, "(" + agent + ".k(),"); close = [node.body.end, ")"]; }
            for (var key in node) {
              var v = node[key];
              if (Array.isArray(v)) v.forEach(walk);
              else if (v && typeof v.type === "string") walk(v);
            }
            if (close) put(close[0], close[1]);
          }
          walk(ast);
          edits.sort(function (a, b) { return a.pos - b.pos || a.seq - b.seq; });
          var out = "", at = 0;
          edits.forEach(function (e) { out += source.slice(at, e.pos) + e.text; at = e.pos; });
          return out + source.slice(at);
        })
        """#
}
