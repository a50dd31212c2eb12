import ArgumentParser
import Foundation
import MacroBase
import MacroRPC

/// Shell completion (bash, zsh, fish) of macro and channel names: the shell runs
/// `macro ---completion ...`, which calls these with the words typed so far.
enum Completions {
    /// The macros: from the daemon when one answers (`--socket` among the words, else the usual
    /// socket), else the `.js` files of `--macros` or the config's macros directory.
    @Sendable static func macroNames(_ words: [String], _ index: Int, _ prefix: String) -> [String] {
        let options = options(from: words)
        if !options.local, options.macros == nil, let path = try? DaemonLink.socketPath(options), let client = try? RPCClient(path: path),
            let entries = try? client.call(.list).arrayValue
        {
            return entries.filter { $0["kind"] != "lib" }.compactMap(\.["name"].stringValue).filter { $0.hasPrefix(prefix) }.sorted()
        }
        let directory = options.macros ?? (try? options.resolvedConfig().macrosDirectory) ?? "macros"
        let files = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return files.filter { $0.hasSuffix(".js") && !$0.hasPrefix(".") }.map { String($0.dropLast(3)) }
            .filter { $0.hasPrefix(prefix) && MacroName.isIdentifier($0) }.sorted()
    }

    /// The progress channels of the config in effect (inner, middle, outer by default).
    @Sendable static func channelNames(_ words: [String], _ index: Int, _ prefix: String) -> [String] {
        let config = (try? options(from: words).resolvedConfig()) ?? MacroConfig()
        return config.channels.map(\.name).filter { $0.hasPrefix(prefix) }
    }

    /// `--socket`, `--config`, `--macros` and `--local` among the typed words.
    static func options(from words: [String]) -> EngineOptions {
        var options = EngineOptions()
        for (i, word) in words.enumerated() {
            let next = i + 1 < words.count ? words[i + 1] : nil
            switch word {
            case "--socket": options.socket = next
            case "--config": options.config = next
            case "--macros": options.macros = next
            case "--local": options.local = true
            default: break
            }
        }
        return options
    }
}
