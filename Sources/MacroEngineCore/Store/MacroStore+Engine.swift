import CJavaScriptCore
import MacroBase

extension MacroStore: MacroEngineSupport {
    /// Publishes the read-only global `store`, a frozen object whose functions read and write
    /// the running macro's own store: `store.get(key)`, `store.set(key, value)`,
    /// `store.delete(key)`, `store.keys()`. Values are JSON: `set` stores `JSON.stringify(value)`
    /// (a value with no JSON form, such as `undefined` or a function, is a TypeError) and `get`
    /// gives back a new copy. The macro is the one whose call is running (its timers and promise
    /// continuations included), so a lib function called by a macro uses that macro's store.
    /// Code run at load has no store: the functions throw there. Also joins the engine's turns.
    public func addMacroSupport(engine: MacroEngine) throws {
        try engine.installStoreObject(store: self)
        engine.addTurnParticipant(self)
    }
}

extension MacroEngine {
    /// Defines the global `store` over `store` (see ``MacroStore/addMacroSupport(engine:)``).
    func installStoreObject(store: MacroStore) throws {
        try sync { runtime in
            // The macro whose store a native function reads: the running call's, else the
            // owner of a macro called synchronously. The runtime is held weakly (it owns these
            // functions) and read directly: the natives run on its loop.
            let macro: (String) throws -> String = { [weak runtime] function in
                guard let runtime else { throw MacroError.engineGone }
                if let macro = runtime.currentCall?.macro ?? runtime.currentOwner?.macro { return macro }
                throw MacroError.typeError(
                    "\(function): no macro is running; a store belongs to the macro whose call runs (code run at load, and the REPL, have none)")
            }
            func key(_ arguments: NativeArguments, _ function: String) throws -> String {
                guard let key = arguments.first?.string else {
                    throw MacroError.typeError("\(function): the key must be a string, got \(arguments.first?.typeDescription ?? "no argument")")
                }
                try MacroStore.check(key: key)
                return key
            }
            let get = runtime.makeFunction(name: "get") { arguments in
                let name = try macro("store.get")
                guard let json = store.json(name, try key(arguments, "store.get")) else { return arguments.context.undefined }
                return arguments.context.string(json)
            }
            let set = runtime.makeFunction(name: "set") { arguments in
                let name = try macro("store.set")
                let key = try key(arguments, "store.set")
                // The JavaScript side made the JSON (so a toJSON or a getter runs as JavaScript,
                // under the watchdog).
                guard let json = arguments[1]?.string else { throw MacroError.typeError("store.set: internal error: no JSON text") }
                try store.set(name, key, json: json)
                return arguments.context.undefined
            }
            let delete = runtime.makeFunction(name: "delete") { arguments in
                let name = try macro("store.delete")
                return arguments.context.boolean(store.delete(name, try key(arguments, "store.delete")))
            }
            let keys = runtime.makeFunction(name: "keys") { arguments in
                let name = try macro("store.keys")
                return arguments.context.string(MacroValue.array(store.keys(name).map { .string($0) }).jsonText())
            }
            let factory = try runtime.evaluateRaw(
                """
                (function (get, set, remove, keys) {
                  const parse = JSON.parse, stringify = JSON.stringify;
                  const describe = (v) => v === null ? "null" : typeof v;
                  return Object.freeze({
                    get(key) {
                      const json = get(key);
                      return json === undefined ? undefined : parse(json);
                    },
                    set(key, value) {
                      if (typeof key !== "string") throw new TypeError("store.set: the key must be a string, got " + describe(key));
                      const json = stringify(value);
                      if (typeof json !== "string")
                        throw new TypeError("store.set: a " + describe(value) + " has no JSON form and cannot be stored (store.delete(key) removes a key)");
                      set(key, json);
                    },
                    delete(key) { return remove(key); },
                    keys() { return parse(keys()); },
                  });
                })
                """, file: nil)
            let object = try runtime.call(factory.objectRef!, arguments: [get.ref, set.ref, delete.ref, keys.ref], macro: nil)
            runtime.defineGlobal("store", object, readOnly: true)
        }
    }
}
