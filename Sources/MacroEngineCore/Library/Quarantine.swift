import Foundation

/// Files whose code kept the engine busy while they loaded, beyond what JavaScriptCore could
/// stop (see ``StallWatch``). The process that stalled hands the list to the one that replaces
/// it (macrod re-executing itself, or `macro` re-running the same command), which reports these
/// files as broken instead of evaluating them again, until their content changes.
public struct Quarantine: Codable, Sendable, Equatable {
    /// One file, as it was when it stalled the engine.
    public struct File: Codable, Sendable, Equatable {
        /// The path as the library names it.
        public var path: String
        /// FNV-1a 64 of the content (a saved change releases the file).
        public var hash: UInt64
        /// How long the engine had been stuck in it, in milliseconds.
        public var stuckMilliseconds: Int
    }

    /// The files.
    public var files: [File] = []

    /// The environment variable that carries the list across `exec`.
    public static let environmentKey = "MACROENGINE_QUARANTINE"

    /// An empty list.
    public init(files: [File] = []) { self.files = files }

    /// Adds `path` as it was when it stalled: `hash` is the content that was evaluated (the file
    /// on disk is left alone when it holds something else, e.g. the old version during a save).
    public mutating func add(_ path: String, hash: UInt64, stuckMilliseconds: Int) {
        files.removeAll { $0.path == path }
        files.append(File(path: path, hash: hash, stuckMilliseconds: stuckMilliseconds))
    }

    /// The entry for `path` when its content is still what stalled the engine.
    public func holds(_ path: String, content: String) -> File? {
        guard let file = files.first(where: { $0.path == path }) else { return nil }
        return file.hash == Self.hash(Array(content.utf8)) ? file : nil
    }

    /// The error a quarantined file is reported with.
    public static func error(for file: File, macro: String) -> MacroError {
        MacroError(
            code: .timeout,
            message: "not loaded: while it loaded, its code kept the engine busy for \(file.stuckMilliseconds) ms, past the time limit and stall_grace_ms, in a way the engine could not interrupt (an endless promise chain?); it is skipped until it is fixed and saved again",
            macro: macro, file: file.path, line: 1, column: 1)
    }

    /// Reads the list from the environment (empty when absent or unreadable).
    public static func fromEnvironment() -> Quarantine {
        guard let text = ProcessInfo.processInfo.environment[environmentKey],
              let list = try? JSONDecoder().decode(Quarantine.self, from: Data(text.utf8)) else { return Quarantine() }
        return list
    }

    /// The list as the environment variable's value.
    public var environmentValue: String {
        (try? String(decoding: JSONEncoder().encode(self), as: UTF8.self)) ?? "{\"files\":[]}"
    }

    /// FNV-1a, 64 bits.
    static func hash(_ bytes: [UInt8]) -> UInt64 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            h ^= UInt64(byte)
            h = h &* 0x100_0000_01b3
        }
        return h
    }
}
