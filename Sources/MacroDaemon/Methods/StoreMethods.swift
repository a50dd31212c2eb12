import MacroEngineCore
import MacroRPC

/// The macros' stores from outside (`macro store`, the dashboard): read, set and delete keys.
/// An edit is journaled like a macro's own change, before its reply leaves.
extension EngineMethods {
    private var store: MacroStore { persistence.macroStore }

    /// `store.get {name, key?}`: `{name, key, value}` (`value` absent when the key is not set),
    /// or without `key` the whole store: `{name, entries: {KEY: VALUE}, bytes, limit}`.
    func storeGet(_ request: MethodRequest) throws -> MethodReply {
        let params = request.params
        let name = try params.macroName()
        if params.value["key"] == .undefined {
            var entries = OrderedFields()
            for (key, json) in store.entries(name).sorted(by: { $0.key < $1.key }) { entries[key] = try Self.value(json) }
            return .value(["name": .string(name), "entries": .object(entries), "bytes": .number(Double(store.bytes(name))), "limit": .number(Double(store.limit))])
        }
        let key = try params.string("key")
        var reply: MacroValue = ["name": .string(name), "key": .string(key)]
        if let json = store.json(name, key) { reply = reply.setting("value", try Self.value(json)) }
        return .value(reply)
    }

    /// `store.set {name, key, value}`: `{name, key, bytes}` (the store's size after). Over the
    /// limit, or a key that is empty or too long, is -32602 and writes nothing.
    func storeSet(_ request: MethodRequest) throws -> MethodReply {
        let params = request.params
        let name = try existingMacro(params)
        let key = try params.string("key")
        let value = params.value["value"]
        guard value != .undefined else { throw params.invalid("value", "is required (any JSON value; store.delete removes a key)") }
        let json = value.jsonText()
        do {
            try store.set(name, key, json: json)
        } catch let error as MacroError {
            throw params.invalid(error.message.contains("key") && !error.message.contains("limit") ? "key" : "value", "refused: \(error.message)")
        }
        // The value by its size and hash: the audit log records who changed what, never the value.
        let bytes = Array(json.utf8)
        changes.audit.record(
            .storeEdit, by: request.connection.actor, name: name,
            details: ["key": .string(key), "op": "set", "bytes": .number(Double(bytes.count)), "hash": .string(SHA256.hex(bytes))])
        return .value(["name": .string(name), "key": .string(key), "bytes": .number(Double(store.bytes(name)))])
    }

    /// `store.delete {name, key}`: `{name, key, deleted}`.
    func storeDelete(_ request: MethodRequest) throws -> MethodReply {
        let params = request.params
        let name = try existingMacro(params)
        let key = try params.string("key")
        let deleted = store.delete(name, key)
        if deleted { changes.audit.record(.storeEdit, by: request.connection.actor, name: name, details: ["key": .string(key), "op": "delete"]) }
        return .value(["name": .string(name), "key": .string(key), "deleted": .bool(deleted)])
    }

    /// `store.list`: `[{name, keys, bytes}]`, the macros whose store holds something, and the limit.
    func storeList(_ request: MethodRequest) throws -> MethodReply {
        let stores = store.macros.map { entry -> MacroValue in
            ["name": .string(entry.macro), "keys": .number(Double(entry.keys)), "bytes": .number(Double(entry.bytes))]
        }
        return .value(["stores": .array(stores), "limit": .number(Double(store.limit))])
    }

    /// The `name` of a store to write: a macro of the library, or one whose store holds something
    /// (its file may have been removed); else `noSuchMacro`.
    private func existingMacro(_ params: Params) throws -> String {
        let name = try params.macroName()
        guard library.entries.contains(where: { $0.name == name }) || store.bytes(name) > 0 else {
            throw MacroError(code: .noSuchMacro, message: "no macro named '\(name)' (a store belongs to a macro of the library)", macro: name)
        }
        return name
    }

    /// A stored JSON text as a value.
    private static func value(_ json: String) throws -> MacroValue {
        try MacroValue(jsonText: json)
    }
}
