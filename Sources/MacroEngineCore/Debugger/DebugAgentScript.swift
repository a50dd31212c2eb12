/// The debugger's side inside the session's engine: the hooks the instrumented code calls
/// (`__dbg.e/l/t/h/s/r/x/w/c`), breakpoints, stepping, exception stops, and what a stopped session
/// answers (stack, scopes, variables, evaluate, setVariable). It talks to Swift through one
/// native, `native(op, text)`: `poll` (the configuration's version), `config`, `stopped` and
/// `reply` (block for the next command), `resumed`, `output`, and `bounded` (call a function
/// under the evaluate's own time limit). It also replaces `Function.prototype.toString` with
/// one that gives an instrumented function's original text (the session's engine is its own
/// realm, in a process of its own).
enum DebugAgentScript {
    /// The JavaScript source: one function expression.
    static let source = #"""
        (function (native, sites, functions, scopes, files, texts, agentName, evaluateLimit) {
          "use strict";
          // A request while stopped ends at its deadline: the hooks of the user's functions it
          // calls, and every loop and function of its own expression (k), throw past it.
          var DateNow = Date.now, DateCtor = Date, requestDeadline = 0;
          function checkDeadline() {
            if (requestDeadline && apply(DateNow, DateCtor, []) > requestDeadline) {
              throw new Error("this request was stopped after " + evaluateLimit + " ms (a debug session's evaluate limit)");
            }
          }
          var apply = Reflect.apply, nativeToString = Function.prototype.toString;
          var indexOf = String.prototype.indexOf, slice = String.prototype.slice, exec = RegExp.prototype.exec;
          var marker = new RegExp(agentName + "\\.e\\((\\d+)\\)");
          var version = -1, breakpoints = Object.create(null), catchAll = false, catchUncaught = false;
          var pauseSerial = 0, entryPending = false;
          var mode = 0, stepFrame = null, current = null, nextFrameId = 1;
          var seen = new WeakSet(), lastPrimitive = { set: false, value: undefined };
          var stopped = null, aborted = false;
        function abort() { throw new Error("the debug session has ended"); }
          var MODE = { "continue": 0, stepIn: 1, next: 2, stepOut: 3 };
          // The debugger's own evaluations (a condition, a logpoint, the console) run with eval on;
          // the macro's code runs with eval as the live engine has it (allow_eval).
          function ev(f, expr) {
            native("eval", "on");
            try { return f.ev(expr); } finally { native("eval", "off"); }
          }

          function refresh() {
            var v = native("poll");
            if (v === -1) { aborted = true; abort(); }
            if (v === version) return;
            version = v;
            var c = JSON.parse(native("config"));
            // By site: a line breakpoint and a function breakpoint may share one.
            var next = Object.create(null);
            c.breakpoints.forEach(function (b) {
              var old = breakpoints[b.site] || [];
              b.hits = 0;
              for (var i = 0; i < old.length; i++) if (old[i].id === b.id) b.hits = old[i].hits;
              (next[b.site] || (next[b.site] = [])).push(b);
            });
            breakpoints = next;
            catchAll = c.exceptions.all;
            catchUncaught = c.exceptions.uncaught;
            if (c.pause > pauseSerial) { pauseSerial = c.pause; mode = -1; }
            if (c.entry) entryPending = true;
          }

          function descends(f, ancestor) {
            for (var p = f.parent; p; p = p.parent) if (p === ancestor) return true;
            return false;
          }
          // Stepping out of `from` (returned or suspended) lands in f when f is back in the frame
          // that called it, or outside that frame once it is no longer running: a callback a
          // native calls again (`forEach`) is another call under the same caller, not a way out.
          function outOf(f, from) {
            if (f === from || descends(f, from) || !(from.done || from.suspended)) return false;
            var caller = from.parent;
            return !caller || caller.done || caller.suspended || f === caller || !descends(f, caller);
          }

          function hitCondition(expr, hits) {
            var m = /^\s*(>=|<=|==|>|<|%)?\s*(\d+)\s*$/.exec(expr);
            if (!m) return true;
            var n = Number(m[2]);
            switch (m[1]) {
              case ">=": return hits >= n;
              case "<=": return hits <= n;
              case ">": return hits > n;
              case "<": return hits < n;
              case "%": return n > 0 && hits % n === 0;
              default: return hits === n;
            }
          }

          function interpolate(message, f) {
            return message.replace(/\{([^}]+)\}/g, function (_, expr) {
              try { return text(ev(f, expr)); } catch (e) { return "<" + String(e) + ">"; }
            });
          }

          function breakpointHit(b, f) {
            if (b.condition) {
              var ok;
              try { ok = ev(f, b.condition); } catch (e) { ok = false; }
              if (!ok) return false;
            }
            b.hits++;
            if (b.hitCondition && !hitCondition(b.hitCondition, b.hits)) return false;
            if (b.logMessage !== undefined && b.logMessage !== null) {
              var s = sites[f.site];
              native("output", JSON.stringify({ text: interpolate(b.logMessage, f) + "\n", file: files[s[5]], line: s[0], column: s[1] }));
              return false;
            }
            return true;
          }

          // Hooks called by the instrumented code.
          function enter(fn) {
          if (aborted) abort();
            var f = { fn: fn, parent: current, site: -1, ev: null, done: false, suspended: false, id: nextFrameId++ };
            current = f;
            return f;
          }
          function leave(f, v) {
            f.done = true;
            if (current === f) current = f.parent;
            return v;
          }
          // Before a call in tail position (a proper tail call): the frame is gone before the callee runs.
          function tail(f) { leave(f); }
          // f runs: the frames above it that neither returned nor wait at an await ended by an
          // exception (a plain frame has no `finally` that would say so).
          function settle(f) {
            var p = current;
            for (var q = p; q; q = q.parent) {
              if (q !== f) continue;
              for (; p !== f; p = p.parent) if (!p.suspended) p.done = true;
              return;
            }
          }
          function suspend(f, v) { f.suspended = true; return v; }
          function resume(f, v) { if (current !== f) settle(f); f.suspended = false; f.done = false; current = f; return v; }
          function hook(f, site, ev) {
            if (current !== f) settle(f);
            // A frame that runs is not done: a generator's, which its caller's hook settled as
            // ended at a yield, is back.
            f.site = site; f.ev = ev; f.suspended = false; f.done = false; current = f;
            if (stopped) { if (requestDeadline) checkDeadline(); return; }
            refresh();
            if (mode === -1) return stop("pause", f);
            if (entryPending) { entryPending = false; return stop("entry", f); }
            var list = breakpoints[site];
            if (list) {
              var ids = [], lines = 0;
              for (var i = 0; i < list.length; i++) {
                if (!breakpointHit(list[i], f)) continue;
                ids.push(list[i].id);
                if (!list[i].fn) lines++;
              }
              if (ids.length) return stop(lines ? "breakpoint" : "function breakpoint", f, { hitBreakpointIds: ids });
            }
            if (mode === 1) return stop("step", f);
            if (mode === 2 && (f === stepFrame || (stepFrame.done && !descends(f, stepFrame)))) return stop("step", f);
            if (mode === 3 && outOf(f, stepFrame)) return stop("step", f);
          }
          function firstSight(error) {
            if (error !== null && (typeof error === "object" || typeof error === "function")) {
              if (seen.has(error)) return false;
              seen.add(error);
              return true;
            }
            if (lastPrimitive.set && lastPrimitive.value === error) return false;
            lastPrimitive.set = true; lastPrimitive.value = error;
            return true;
          }
          function caughtAbove(f) {
            for (var p = f.parent; p; p = p.parent) if (!p.done && p.site >= 0 && sites[p.site][4]) return true;
            return false;
          }
          // The stop's description, and what an `exceptionInfo` asks: the error's name (its type
          // for a value that is no Error), message, how it stopped (`always`: every throw,
          // `unhandled`: no frame catches it) and the stack where it stopped.
          function exceptionInfo(error, f, breakMode) {
            var t, id, message;
            try {
              if (error instanceof Error) {
                id = String(error.name); message = String(error.message); t = id + ": " + message;
              } else {
                t = text(error); message = t;
                id = error === null ? "null" : typeof error === "object" ? preview(error).replace(/ ?\{.*$/, "") || "Object" : typeof error;
              }
            } catch (e) { t = message = id = "exception"; }
            var stack = [];
            for (var p = f; p; p = p.parent) {
              if (p.done || p.site < 0) continue;
              var at = position(p);
              stack.push("    at " + at.name + " (" + at.file + ":" + at.line + ":" + at.column + ")");
            }
            return { description: t, text: t, exception: { id: id, message: message, breakMode: breakMode, stackTrace: stack.join("\n") } };
          }
          function thrown(f, error) {
            if (stopped || f.site < 0 || !firstSight(error)) return;
            refresh();
            var uncaught = !caughtAbove(f);
            if (catchAll || (catchUncaught && uncaught)) stop("exception", f, exceptionInfo(error, f, uncaught ? "unhandled" : "always"));
          }
          // A throw statement of a plain frame: unless a try of the frame's own catches it (its
          // catch clause reports it), it leaves the frame, as a wrapped frame's catch would see.
          function throwing(f, error) {
            if (f.site >= 0 && !sites[f.site][4]) thrown(f, error);
            return error;
          }
          function caught(f, error) {
            if (current !== f) settle(f);
            f.done = false; current = f;
            if (stopped || f.site < 0 || !firstSight(error)) return;
            refresh();
            if (catchAll) stop("exception", f, exceptionInfo(error, f, "always"));
          }

          // While stopped.
          function text(v) {
            switch (typeof v) {
              case "string": return v;
              case "function": return "function " + (v.name || "(anonymous)");
              case "object":
                if (v === null) return "null";
                try { return JSON.stringify(v); } catch (e) { return Object.prototype.toString.call(v); }
              default: return String(v);
            }
          }
          function preview(v) {
            if (Array.isArray(v)) return "Array(" + v.length + ")";
            var name = "Object";
            try { var proto = Object.getPrototypeOf(v); if (proto && proto.constructor && proto.constructor.name) name = proto.constructor.name; } catch (e) {}
            if (v instanceof Error) return String(v.name) + ": " + String(v.message);
            var keys = [];
            try { keys = Object.keys(v); } catch (e) {}
            var parts = keys.slice(0, 5).map(function (k) {
              var x; try { x = v[k]; } catch (e) { x = undefined; }
              return k + ": " + (x !== null && typeof x === "object" ? (Array.isArray(x) ? "[…]" : "{…}") : typeof x === "string" ? JSON.stringify(x) : typeof x === "function" ? "ƒ" : String(x));
            });
            return (name === "Object" ? "" : name + " ") + "{" + parts.join(", ") + (keys.length > 5 ? ", …" : "") + "}";
          }
          function describe(v) {
            var t = typeof v;
            if (v === null) return { value: "null", type: "object", ref: 0 };
            if (t === "string") return { value: JSON.stringify(v), type: t, ref: 0 };
            if (t === "function") return { value: "ƒ " + (v.name || "(anonymous)") + "()", type: t, ref: 0 };
            if (t === "object") return { value: preview(v), type: t, ref: handle({ object: v }) };
            return { value: String(v), type: t, ref: 0 };
          }
          function handle(h) { stopped.handles.push(h); return stopped.handles.length; }
          function frameOf(id) {
            for (var i = 0; i < stopped.frames.length; i++) if (stopped.frames[i].id === id) return stopped.frames[i];
            return stopped.frames[0];
          }
          function position(f) {
            var s = sites[f.site];
            var fn = functions[s[2]];
            return { id: f.id, name: fn[0], file: files[s[5]], line: s[0], column: s[1] };
          }
          function stackTrace() {
            return { frames: stopped.frames.map(position) };
          }
          function scopeChain(f) {
            var locals = [], closure = [], seenNames = Object.create(null);
            var inFunction = true;
            for (var id = sites[f.site][3]; id >= 0; id = scopes[id].parent) {
              var sc = scopes[id];
              sc.names.forEach(function (n) {
                if (seenNames[n]) return;
                seenNames[n] = true;
                (inFunction ? locals : closure).push(n);
              });
              if (sc.fn) inFunction = false;
            }
            return { locals: locals, closure: closure };
          }
          function scopesOf(args) {
            var f = frameOf(args.frameId);
            var chain = scopeChain(f);
            var out = [{ name: "Locals", ref: handle({ frame: f, names: chain.locals }), expensive: false }];
            if (chain.closure.length) out.push({ name: "Closure", ref: handle({ frame: f, names: chain.closure }), expensive: false });
            out.push({ name: "Globals", ref: handle({ object: globalThis, globals: true }), expensive: true });
            return { scopes: out };
          }
          function variables(args) {
            var h = stopped.handles[args.ref - 1];
            if (!h) throw new Error("no such variables reference: " + args.ref);
            var out = [];
            if (h.frame) {
              h.names.forEach(function (n) {
                var v;
                try { v = ev(h.frame, n); } catch (e) { out.push({ name: n, value: "<uninitialized>", type: "undefined", ref: 0 }); return; }
                var d = describe(v); d.name = n; out.push(d);
              });
              return { variables: out };
            }
            var o = h.object;
            var names = h.globals ? Object.getOwnPropertyNames(o).filter(function (n) { return n.indexOf("__") !== 0 && !builtin[n]; }).sort()
                                  : Object.getOwnPropertyNames(o);
            names.forEach(function (n) {
              if (Array.isArray(o) && n === "length") return;
              var v;
              try { v = o[n]; } catch (e) { v = "<" + String(e) + ">"; }
              var d = describe(v); d.name = n; out.push(d);
            });
            return { variables: out };
          }
          // An expression of a request, with the deadline's checks in its loops and functions.
          function bounded(expression) {
            var code = native("instrument", String(expression));
            return typeof code === "string" ? code : String(expression);
          }
          function evaluate(args) {
            var f = args.frameId ? frameOf(args.frameId) : stopped.frames[0];
            var d = describe(ev(f, bounded(args.expression)));
            return d;
          }
          function setVariable(args) {
            var h = stopped.handles[args.ref - 1];
            if (!h) throw new Error("no such variables reference: " + args.ref);
            var f = h.frame || stopped.frames[0];
            if (h.frame) {
              if (h.names.indexOf(args.name) < 0) throw new Error("no variable '" + args.name + "' in this scope");
              return describe(ev(f, bounded(args.name + " = (" + args.value + ")")));
            }
            var v = ev(f, bounded("(" + args.value + ")"));
            h.object[args.name] = v;
            return describe(h.object[args.name]);
          }
          var builtin = Object.create(null);
          // Completions of the text before the cursor: after `a.b.`, the properties of `a.b` (own
          // and inherited, evaluated in the frame; getters are not run); else the names in the
          // frame's scopes and the globals. Each `{label, type}` starts with the word being typed
          // (its length is `length`), sorted, without duplicates. Only a chain of names is
          // evaluated before a dot (`a.b.`, not a call).
          function completions(args) {
            var f = args.frameId ? frameOf(args.frameId) : stopped.frames[0];
            var before = String(args.text);
            var prefix = /[A-Za-z_$][\w$]*$/.exec(before);
            prefix = prefix ? prefix[0] : "";
            before = before.slice(0, before.length - prefix.length);
            var out = [], taken = Object.create(null);
            function add(name, type) {
              if (taken[name] || name.slice(0, prefix.length) !== prefix || !/^[A-Za-z_$][\w$]*$/.test(name) || name.indexOf(agentName) === 0) return;
              taken[name] = true;
              out.push({ label: name, type: type });
            }
            // A function's name is a method or a function. No getter of the user's is run: the
            // built-ins' data properties are the lockdown's accessors, whose getter only returns.
            function kind(o, name, other) {
              var d, v;
              try {
                d = Object.getOwnPropertyDescriptor(o, name);
                v = !d ? undefined : "value" in d ? d.value : d.get && d.get.name === "__macroengine_frozen_get" ? apply(d.get, o, []) : undefined;
              } catch (e) { v = undefined; }
              return typeof v === "function" ? (other === "property" ? "method" : "function") : other;
            }
            if (/\.\s*$/.test(before)) {
              var m = /((?:[A-Za-z_$][\w$]*\s*\??\.\s*)*[A-Za-z_$][\w$]*)\s*\??\.\s*$/.exec(before);
              if (!m || /(^|[^\w$])\d+\s*\.\s*$/.test(before)) return { targets: [], length: prefix.length };
              // What cannot be evaluated (a name not defined yet, as one types) has no completions.
              var v;
              try { v = ev(f, bounded(m[1])); } catch (e) { if (requestDeadline && apply(DateNow, DateCtor, []) > requestDeadline) throw e; v = undefined; }
              if (v === null || v === undefined) return { targets: [], length: prefix.length };
              for (var o = Object(v), depth = 0; o && depth < 64; o = Object.getPrototypeOf(o), depth++) {
                Object.getOwnPropertyNames(o).forEach(function (n) { add(n, kind(o, n, "property")); });
              }
            } else {
              var chain = scopeChain(f);
              chain.locals.concat(chain.closure).forEach(function (n) { add(n, "variable"); });
              Object.getOwnPropertyNames(globalThis).forEach(function (n) { if (n.indexOf("__") !== 0) add(n, kind(globalThis, n, "variable")); });
            }
            out.sort(function (a, b) { return a.label < b.label ? -1 : a.label > b.label ? 1 : 0; });
            return { targets: out, length: prefix.length };
          }

          function stop(reason, f, extra) {
            mode = 0; stepFrame = null;
            var frames = [];
            for (var p = f; p; p = p.parent) if (!p.done && p.site >= 0) frames.push(p);
            stopped = { frames: frames, handles: [] };
            var info = position(f);
            info.reason = reason;
            if (extra) for (var k in extra) info[k] = extra[k];
            var command = native("stopped", JSON.stringify(info));
            try {
              for (;;) {
                var c = JSON.parse(command);
              if (c.op === "abort") { aborted = true; stopped = null; abort(); }
                if (c.op in MODE) {
                  mode = MODE[c.op];
                  stepFrame = mode >= 2 ? frameOf(c.frameId || 0) : null;
                  if (mode >= 2 && stepFrame !== frames[0]) { /* stepping from a selected outer frame */ }
                  stopped = null;
                  native("resumed", "{}");
                  return;
                }
                // Each request runs under the evaluate's own time limit (a getter or an expression
                // of the user's may not end): past it, this request fails and the session goes on.
                var result;
                requestDeadline = apply(DateNow, DateCtor, []) + evaluateLimit;
                try {
                  result = native("bounded", function () {
                    try {
                      switch (c.op) {
                        case "stackTrace": return stackTrace();
                        case "scopes": return scopesOf(c);
                        case "variables": return variables(c);
                        case "evaluate": return evaluate(c);
                        case "setVariable": return setVariable(c);
                        case "completions": return completions(c);
                        default: throw new Error("unknown debugger command '" + c.op + "'");
                      }
                    } catch (e) {
                      return { error: e instanceof Error ? String(e.name) + ": " + String(e.message) : text(e) };
                    }
                  });
                } catch (e) {
                  result = { error: String(e && e.message) };
                } finally {
                  requestDeadline = 0;
                }
                command = native("reply", JSON.stringify(result));
              }
            } finally {
              stopped = null;
            }
          }

          Object.getOwnPropertyNames(globalThis).forEach(function (n) { builtin[n] = true; });
          delete builtin.progress;

          // toString: an instrumented function's text is found in the file JavaScriptCore holds
          // (its own `__dbg.e(N)` names the file), and mapped back through the insertions.
          function sourceOffset(t, x) {
            var d = 0, e = t.edits;
            for (var i = 0; i < e.length; i += 2) {
              if (e[i] + e[i + 1] > x) break;
              d += e[i + 1];
            }
            return x - d;
          }
          function originalText(s) {
            var m = apply(exec, marker, [s]);
            if (!m) return s;
            var fn = functions[Number(m[1])];
            var t = fn && texts[fn[3]];
            if (!t) return s;
            var at = apply(indexOf, t.out, [s]);
            if (at < 0) return s;
            return apply(slice, t.orig, [sourceOffset(t, at), sourceOffset(t, at + s.length)]);
          }
          var toString = {
            toString() {
              if (this === toString) return apply(nativeToString, nativeToString, []);
              return originalText(apply(nativeToString, this, []));
            }
          }.toString;
          Object.defineProperty(Function.prototype, "toString", { value: toString, writable: true, enumerable: false, configurable: true });
          return Object.freeze({ e: enter, l: leave, t: tail, s: suspend, r: resume, h: hook, x: thrown, c: caught, w: throwing, k: checkDeadline });
        })
        """#
}
