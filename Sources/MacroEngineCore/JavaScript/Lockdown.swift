/// Hardened built-ins, in the spirit of Hardened JavaScript's `lockdown()` (SES) and Redis 7's
/// read-only Lua globals: before any macro or lib file runs, the built-in constructors, their
/// prototypes and the namespace objects are frozen, so no macro can change them for the others.
///
/// Two details make it usable from ordinary (sloppy-mode) macro code:
/// - Each writable data property becomes a non-configurable accessor. Its setter throws a
///   `TypeError` naming the property when a macro assigns to the built-in itself
///   (`Array.prototype.map = null`, `JSON.stringify = ...`); a plain frozen property would fail
///   silently in sloppy mode.
/// - The same setter fixes the "override mistake": assigning `obj.toString = f` on an ordinary
///   object (whose prototype chain reaches a frozen built-in) defines `toString` on `obj`, as it
///   would without the freeze.
/// - `Error.stackTraceLimit` is process-wide in JavaScriptCore, and any assignment sets it, even
///   a refused one: the refusal reports it, and the engine puts the limit back when the entry
///   ends (``JSRuntime/installLockdown()``), so one macro cannot empty the others' stacks.
///
/// The source evaluates to a function taking that report (a native function); it returns the
/// function that restores the limit and the function that hardens an engine global the same way.
/// The global bindings of the built-ins (`JSON`, `Math`, `Array`, ...) become read-only too.
///
/// Cost: accesses stay cached (measured with JSC 2.50.6: `Math.floor` in a loop as fast as
/// before), except where JavaScriptCore guards a fast path with a watchpoint on a built-in
/// property: any change to `Array.prototype.constructor` (even making it read-only) turns off the
/// species fast path of `map`/`filter`/`slice`/`concat`, and to `Array.prototype[Symbol.iterator]`
/// the one of spreading and `for...of` over arrays (3-4x slower in loops that do little else).
enum Lockdown {
    static let source = #"""
        (function (touchedStackLimit) {
          "use strict";
          var g = globalThis;
          var constructors = ["Object", "Array", "Function", "String", "Number", "Boolean", "Symbol", "Promise",
            "RegExp", "Date", "Map", "Set", "WeakMap", "WeakSet", "WeakRef", "FinalizationRegistry", "BigInt", "Proxy",
            "Error", "EvalError", "RangeError", "ReferenceError", "SyntaxError", "TypeError", "URIError", "AggregateError",
            "ArrayBuffer", "SharedArrayBuffer", "DataView", "Int8Array", "Uint8Array", "Uint8ClampedArray", "Int16Array",
            "Uint16Array", "Int32Array", "Uint32Array", "Float32Array", "Float64Array", "BigInt64Array", "BigUint64Array"];
          var namespaces = ["JSON", "Math", "Reflect", "Intl", "Atomics"];
          var roots = [];
          constructors.forEach(function (name) {
            var c = g[name];
            if (typeof c !== "function") return;
            roots.push([name, c]);
            if (c.prototype) roots.push([name + ".prototype", c.prototype]);
          });
          namespaces.forEach(function (name) { if (g[name] && typeof g[name] === "object") roots.push([name, g[name]]); });
          var typedArray = Object.getPrototypeOf(Int8Array);
          roots.push(["TypedArray", typedArray], ["TypedArray.prototype", typedArray.prototype]);
          var asyncFunction = Object.getPrototypeOf(async function () {});
          var generatorFunction = Object.getPrototypeOf(function* () {});
          var asyncGeneratorFunction = Object.getPrototypeOf(async function* () {});
          roots.push(["AsyncFunction.prototype", asyncFunction], ["GeneratorFunction.prototype", generatorFunction],
            ["Generator.prototype", generatorFunction.prototype], ["AsyncGeneratorFunction.prototype", asyncGeneratorFunction],
            ["AsyncGenerator.prototype", asyncGeneratorFunction.prototype],
            ["Iterator.prototype", Object.getPrototypeOf(Object.getPrototypeOf([][Symbol.iterator]()))],
            ["ArrayIterator.prototype", Object.getPrototypeOf([][Symbol.iterator]())]);
          if (g.Intl) Object.getOwnPropertyNames(g.Intl).forEach(function (name) {
            var c = g.Intl[name];
            if (typeof c === "function" && c.prototype) roots.push(["Intl." + name + ".prototype", c.prototype]);
          });
          // The intrinsics no property leads to (SES's getIntrinsics lists them): reached through
          // an instance only, each tried on its own (an engine may lack one).
          var getProto = Object.getPrototypeOf;
          [["StringIterator.prototype", function () { return getProto(""[Symbol.iterator]()); }],
           ["MapIterator.prototype", function () { return getProto(new Map()[Symbol.iterator]()); }],
           ["SetIterator.prototype", function () { return getProto(new Set()[Symbol.iterator]()); }],
           ["RegExpStringIterator.prototype", function () { return getProto(/a/[Symbol.matchAll]("a")); }],
           ["AsyncIterator.prototype", function () { return getProto(asyncGeneratorFunction.prototype); }],
           ["IteratorHelper.prototype", function () { return getProto([].values().map(function (x) { return x; })); }],
           ["WrapForValidIterator.prototype", function () { return getProto(g.Iterator.from({ next: function () {} })); }],
           ["Segments.prototype", function () { return getProto(new Intl.Segmenter().segment("")); }],
           ["SegmentIterator.prototype", function () { return getProto(new Intl.Segmenter().segment("")[Symbol.iterator]()); }],
           ["Iterator", function () { return g.Iterator; }], ["Iterator.prototype", function () { return g.Iterator.prototype; }]
          ].forEach(function (entry) {
            var found;
            try { found = entry[1](); } catch (e) { return; }
            if (found && (typeof found === "object" || typeof found === "function")) roots.push([entry[0], found]);
          });
          // Then everything reachable from them: property values, accessors' functions and
          // prototypes (a getter's function, %ThrowTypeError% ...), so no
          // intrinsic stays writable because nobody listed it.
          var reached = new WeakSet();
          // Adds to `found` everything reachable from it that is not reached yet.
          function reach(found) {
            var walk = found.slice();
            found.forEach(function (root) { reached.add(root[1]); });
          for (var i = 0; i < walk.length; i++) {
            var path = walk[i][0], object = walk[i][1];
            var next = [["[[Prototype]]", getProto(object)]];
            var own = Object.getOwnPropertyDescriptors(object);
            Reflect.ownKeys(own).forEach(function (key) {
              var d = own[key], name = path + "." + (typeof key === "symbol" ? "[" + String(key) + "]" : String(key));
              if ("value" in d) next.push([name, d.value]); else next.push([name + " getter", d.get], [name + " setter", d.set]);
            });
            next.forEach(function (candidate) {
              var v = candidate[1];
              if (v === null || (typeof v !== "object" && typeof v !== "function") || v === g || reached.has(v)) return;
              reached.add(v);
              walk.push(candidate);
              found.push(candidate);
            });
          }
          }
          reach(roots);
          var descriptors = Object.getOwnPropertyDescriptors, ownKeys = Reflect.ownKeys, define = Object.defineProperty;
          var preventExtensions = Object.preventExtensions, isFrozen = Object.isFrozen, TypeErrorCtor = TypeError;
          // JavaScriptCore sets its process-wide stack-trace limit from any assignment to
          // Error.stackTraceLimit, even one the setter below refuses: the setter tells the engine
          // (touchedStackLimit), which puts the limit back after the entry with the function this
          // script returns (an assignment of the frozen value that the setter lets through).
          var ErrorCtor = g.Error, restoringLimit = false, stackLimit = g.Error.stackTraceLimit;
          var paths = new WeakMap();
          roots.forEach(function (root) { if (!paths.has(root[1])) paths.set(root[1], root[0]); });
          var hasPath = WeakMap.prototype.has.bind(paths), pathOf = WeakMap.prototype.get.bind(paths);
          function harden(path, object) {
            if (isFrozen(object)) return;
            var all = descriptors(object);
            ownKeys(all).forEach(function (key) {
              var d = all[key];
              if (!d.configurable) {
                // e.g. Array.prototype.length: writable but not configurable; read-only from now on.
                if ("value" in d && d.writable) define(object, key, { writable: false });
                return;
              }
              // Already read-only data, or an accessor of the engine's own: only made permanent.
              if (!("value" in d) || !d.writable) return define(object, key, { configurable: false });
              var value = d.value, name = typeof key === "symbol" ? "[" + String(key) + "]" : String(key);
              define(object, key, {
                // Named like the engine's other helpers, so a profile's frame of it is recognised
                // whatever JavaScriptCore reports with it (see FoldedStacks).
                get: function __macroengine_frozen_get() { return value; },
                set: function __macroengine_frozen(v) {
                  if (restoringLimit) return;
                  if (object === ErrorCtor && key === "stackTraceLimit") touchedStackLimit();  // whatever the receiver
                  // On the built-in itself, or on another built-in that inherits it: refused by name.
                  if (this === object || hasPath(this)) throw new TypeErrorCtor("Cannot assign to read only property '" + name + "' of " + (this === object ? path : pathOf(this)) + " (built-ins are frozen; config: harden_builtins)");
                  define(this, key, { value: v, writable: true, enumerable: true, configurable: true });
                },
                enumerable: d.enumerable, configurable: false
              });
            });
            // Every property is now non-configurable and read-only (or a refusing accessor), so
            // preventExtensions completes what Object.freeze would do. Object.freeze itself is not
            // used: on an object whose properties were just redefined (a dictionary in JSC) it makes
            // every later access uncached (measured: Math.floor 4x slower).
            preventExtensions(object);
          }
          roots.forEach(function (root) { harden(root[0], root[1]); });
          constructors.concat(namespaces, ["Iterator"]).forEach(function (name) {
            if (name in g) define(g, name, { writable: false, configurable: false });
          });
          define(g, "globalThis", { writable: false, configurable: false });
          // The engine's own globals (sleep, the timers, console, progress, its setters and
          // getters) are hardened the same way as they are defined, so no macro can change them
          // for the others: `harden(name, value)`.
          return [function __macroengine_restoreStackLimit() {
            restoringLimit = true;
            try { ErrorCtor.stackTraceLimit = stackLimit; } finally { restoringLimit = false; }
          }, function __macroengine_harden(name, value) {
            if (value === null || value === g || (typeof value !== "object" && typeof value !== "function") || reached.has(value)) return;
            var found = [[name, value]];
            reach(found);
            found.forEach(function (root) { if (!paths.has(root[1])) paths.set(root[1], root[0]); });
            found.forEach(function (root) { harden(root[0], root[1]); });
          }];
        })
        """#
}
