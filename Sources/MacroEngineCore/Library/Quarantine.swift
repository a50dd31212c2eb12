import Foundation

/// Files whose code stalled the engine beyond what JavaScriptCore could stop (see
/// ``StallWatch``), kept out of the engine until their content changes or the quarantine is
/// lifted. The process that stalled hands the list to the one that replaces it (macrod
/// re-executing itself, or `macro` re-running the same command).
///
/// The rule, by behaviour:
/// - a file that stalls while it loads is quarantined at once (loading it again would stall again);
/// - a file whose calls, timers or promise jobs stall the engine (see ``CodeOwner``) is quarantined
///   after `limit` such stalls within `window` seconds (``strike(_:at:window:limit:stuckMilliseconds:)``).
public struct Quarantine: Codable, Sendable, Equatable {
    /// One file, as it was when it was put aside.
    public struct File: Codable, Sendable, Equatable {
        /// The path as the library names it.
        public var path: String
        /// FNV-1a 64 of the content (a saved change releases the file).
        public var hash: UInt64
        /// How long the engine had been stuck in it the last time, in milliseconds.
        public var stuckMilliseconds: Int
        /// The stalls it caused (1 for a stall at load).
        public var stalls: Int = 1
        /// True when it stalled while it loaded; false when its calls, timers or jobs did.
        public var atLoad: Bool = true
        /// The macro's name (nil for a lib file).
        public var macro: String? = nil
        /// When it was put aside (seconds since 1970).
        public var since: Double = 0

        /// Why it is quarantined, in words (for `macro.list`, `engine.status`, the dashboard).
        public var reason: String {
            atLoad
                ? "while it loaded, its code kept the engine busy for \(stuckMilliseconds) ms, past the time limit and stall_grace_ms, in a way the engine could not interrupt (an endless promise chain?)"
                : "its code stalled the engine \(stalls) times (the last for \(stuckMilliseconds) ms): it kept the engine busy past its time limit plus stall_grace_ms in a way the engine could not interrupt (an endless chain of promise jobs, e.g. `for (;;) await null`?)"
        }

        /// The ways to lift it, in words.
        public var remedy: String {
            let name = macro ?? path
            return "save a new version of the file, or lift it with `macro unquarantine \(name)` (JSON-RPC macro.unquarantine)"
        }
    }

    /// Stalls counted against a file that is not (yet) quarantined.
    public struct Strike: Codable, Sendable, Equatable {
        /// The file, as it was loaded.
        public var owner: CodeOwner
        /// When each stall was noticed (uptime seconds).
        public var times: [Double]
    }

    /// The files.
    public var files: [File] = []
    /// Stalls of files not quarantined yet.
    public var strikes: [Strike] = []

    /// The environment variable that carries the list across `exec`.
    public static let environmentKey = "MACROENGINE_QUARANTINE"

    /// An empty list.
    public init(files: [File] = []) { self.files = files }

    /// Adds `path` as it was when it stalled while loading: `hash` is the content that was
    /// evaluated (the file on disk is left alone when it holds something else, e.g. the old
    /// version during a save).
    public mutating func add(_ path: String, hash: UInt64, stuckMilliseconds: Int, macro: String? = nil) {
        files.removeAll { $0.path == path }
        strikes.removeAll { $0.owner.file == path }
        files.append(File(path: path, hash: hash, stuckMilliseconds: stuckMilliseconds, macro: macro, since: Date().timeIntervalSince1970))
    }

    /// Counts a stall of `owner`'s code (a call, a timer, a promise job) at `now` (uptime
    /// seconds). Returns the file when this stall puts it aside: `limit` stalls of the same
    /// content within `window` seconds. A different content of the same file starts afresh.
    public mutating func strike(_ owner: CodeOwner, at now: Double, window: Double, limit: Int, stuckMilliseconds: Int) -> File? {
        var times = strikes.first { $0.owner == owner }?.times ?? []
        strikes.removeAll { $0.owner.file == owner.file }
        times = times.filter { now - $0 < window } + [now]
        guard times.count >= max(1, limit) else {
            strikes.append(Strike(owner: owner, times: times))
            return nil
        }
        files.removeAll { $0.path == owner.file }
        let file = File(
            path: owner.file, hash: owner.hash, stuckMilliseconds: stuckMilliseconds, stalls: times.count,
            atLoad: false, macro: owner.macro, since: Date().timeIntervalSince1970)
        files.append(file)
        return file
    }

    /// Lifts the quarantine of `path` (and forgets its stalls); returns the entry that was lifted.
    @discardableResult
    public mutating func lift(_ path: String) -> File? {
        strikes.removeAll { $0.owner.file == path }
        guard let index = files.firstIndex(where: { $0.path == path }) else { return nil }
        return files.remove(at: index)
    }

    /// The entry for `path` when its content is still what stalled the engine.
    public func holds(_ path: String, content: String) -> File? {
        guard let file = files.first(where: { $0.path == path }) else { return nil }
        return file.hash == Self.hash(Array(content.utf8)) ? file : nil
    }

    /// The error a quarantined file is reported with, and its callers are answered with.
    public static func error(for file: File, macro: String) -> MacroError {
        MacroError(
            code: .quarantined,
            message: "\(macro) is quarantined: \(file.reason); it is not run until the quarantine is lifted: \(file.remedy)",
            macro: macro, file: file.path, line: 1, column: 1)
    }

    /// Reads the list from the environment (empty when absent or unreadable).
    public static func fromEnvironment() -> Quarantine {
        guard let text = ProcessInfo.processInfo.environment[environmentKey],
            let list = try? JSONDecoder().decode(Quarantine.self, from: Data(text.utf8))
        else { return Quarantine() }
        return list
    }

    /// The list as the environment variable's value.
    public var environmentValue: String {
        (try? String(decoding: JSONEncoder().encode(self), as: UTF8.self)) ?? "{\"files\":[],\"strikes\":[]}"
    }

    /// FNV-1a, 64 bits.
    public static func hash(_ bytes: [UInt8]) -> UInt64 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            h ^= UInt64(byte)
            h = h &* 0x100_0000_01b3
        }
        return h
    }
}
