import CJavaScriptCore

/// The global name of each macro (`bump`), by which other macros call it. It is an accessor the
/// engine owns, not a plain property: no macro or lib file can replace or delete another macro
/// (`globalThis.bump = 1` and `bump = 1` are TypeErrors naming it), and a reload swaps the
/// function behind the same name. Lib files' own top-level declarations stay ordinary,
/// writable globals: they are shared code (README, Shared code).
extension JSRuntime {
    /// Makes `name` answer `function` (defining the protected accessor the first time).
    func defineMacroGlobal(_ name: String, _ function: JSValue) throws {
        let helpers = try macroGlobalHelpers()
        _ = try call(helpers.define, arguments: [context.string(name).ref, function.ref], macro: name)
    }

    /// A removed macro's name answers `undefined` (the accessor stays: it cannot be deleted).
    func removeMacroGlobal(_ name: String) throws {
        let helpers = try macroGlobalHelpers()
        _ = try call(helpers.remove, arguments: [context.string(name).ref], macro: name)
    }

    private func macroGlobalHelpers() throws -> (define: JSObjectRef, remove: JSObjectRef) {
        if let define = macroGlobalDefineRef, let remove = macroGlobalRemoveRef { return (define, remove) }
        // Built-ins are captured before any macro runs, so a macro that replaced one (with
        // harden_builtins off) cannot reach in here.
        let pair = try evaluateRaw(
            """
            (function (g) {
              "use strict";
              var defineProperty = Object.defineProperty, describe = Object.getOwnPropertyDescriptor;
              var functions = Object.create(null);
              function define(name, fn) {
                if (!(name in functions)) {
                  var existing = describe(g, name);
                  if (existing && !existing.configurable)
                    throw new TypeError("'" + name + "' is already a global of a lib file; rename the macro or the lib's declaration");
                  defineProperty(g, name, {
                    get: function () { return functions[name]; },
                    set: function () {
                      throw new TypeError("Cannot assign to read only property '" + name + "' of the global object: it is the macro " + name + ", which no other code may replace");
                    },
                    enumerable: true, configurable: false
                  });
                }
                functions[name] = fn;
              }
              function remove(name) { if (name in functions) functions[name] = undefined; }
              return [define, remove];
            })(globalThis)
            """, file: nil)
        guard let array = pair.objectRef,
            let define = JSValue(JSObjectGetPropertyAtIndex(context.ref, array, 0, nil), in: context).objectRef,
            let remove = JSValue(JSObjectGetPropertyAtIndex(context.ref, array, 1, nil), in: context).objectRef
        else { throw MacroError(code: .threw, message: "the engine's macro-global helpers did not evaluate") }
        JSValueProtect(context.ref, define)
        JSValueProtect(context.ref, remove)
        macroGlobalDefineRef = define
        macroGlobalRemoveRef = remove
        return (define, remove)
    }
}
