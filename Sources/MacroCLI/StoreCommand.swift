import ArgumentParser
import Foundation
import MacroBase
import MacroRPC

/// `macro store NAME [KEY [VALUE]]`.
struct StoreCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "store",
        abstract: "Show or edit what a macro keeps in its store, in the daemon.",
        discussion: """
            A macro keeps JSON values between calls with store.get(key), store.set(key, value), \
            store.delete(key) and store.keys() (docs/macros.md, "The store"). From outside:

              macro store                      the macros whose store holds something
              macro store counter              every key of counter's store, with its value
              macro store counter count        one value, as JSON
              macro store counter count 0      set it (JSON when valid, else a string)
              macro store counter count --delete

            An edit is journaled like a macro's own change, and refused whole when it would \
            pass store_limit_bytes.
            """)
    @Argument(help: "The macro's name (none: list the stores).", completion: .custom(Completions.macroNames)) var name: String?
    @Argument(help: "A key of its store.") var key: String?
    @Argument(help: "The value to set: JSON when valid, else a string.") var value: String?
    @Flag(help: "Delete KEY.") var delete = false
    @OptionGroup var daemon: DaemonOptions
    var options: EngineOptions { EngineOptions(daemon) }

    func validate() throws {
        if delete, key == nil { throw ValidationError("--delete needs a KEY") }
        if delete, value != nil { throw ValidationError("--delete takes no VALUE") }
        if key != nil, name == nil { throw ValidationError("a KEY needs the macro's NAME first") }
    }

    func run() throws {
        let client = try DaemonLink.require(options, for: "store")
        do {
            guard let name else { return try list(client) }
            guard let key else { return try show(client, name) }
            if delete {
                let result = try client.call(.storeDelete, ["name": .string(name), "key": .string(key)])
                if options.json { return Console.printJSON(result) }
                if result["deleted"] != true { Console.error("\(name): no key '\(key)' in its store") }
                return
            }
            if let value {
                let parsed = (try? MacroValue(jsonText: value)) ?? .string(value)
                let result = try client.call(.storeSet, ["name": .string(name), "key": .string(key), "value": parsed])
                if options.json { Console.printJSON(result) }
                return
            }
            let result = try client.call(.storeGet, ["name": .string(name), "key": .string(key)])
            if options.json { return Console.printJSON(result) }
            guard result["value"] != .undefined else {
                throw Failure(exit: 66, kind: "noSuchKey", message: "\(name): no key '\(key)' in its store (macro store \(name) lists its keys)")
            }
            print(result["value"].jsonText())
        } catch let error as RPCError { throw DaemonLink.report(error) }
    }

    private func list(_ client: RPCClient) throws {
        let result = try client.call(.storeList)
        if options.json { return Console.printJSON(result) }
        let stores = result["stores"].arrayValue ?? []
        if stores.isEmpty { return Console.error("no macro has anything in its store") }
        let limit = result["limit"].intValue ?? 0
        for store in stores {
            print("\(store["name"].stringValue ?? "")  \(store["keys"].intValue ?? 0) key(s), \(store["bytes"].intValue ?? 0) of \(limit) bytes")
        }
    }

    private func show(_ client: RPCClient, _ name: String) throws {
        let result = try client.call(.storeGet, ["name": .string(name)])
        if options.json { return Console.printJSON(result) }
        guard let entries = result["entries"].objectValue, !entries.isEmpty else { return Console.error("\(name): its store is empty") }
        for (key, value) in entries { print("\(Self.printable(key))\t\(value.jsonText())") }
    }

    /// `key` as is, or as a JSON string when it holds control characters (an escape sequence in
    /// a key must not drive the terminal).
    static func printable(_ key: String) -> String {
        let control = key.unicodeScalars.contains { $0.value < 0x20 || (0x7f...0x9f).contains($0.value) }
        return control ? MacroValue.string(key).jsonText() : key
    }
}
