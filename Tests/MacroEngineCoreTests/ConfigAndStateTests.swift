import Foundation
import MacroEngineCore
import MacroTestSupport
import Testing

@Suite("Config")
struct ConfigTests {
    @Test func theShippedConfigIsTheDefaults() throws {
        let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let config = try MacroConfig.load(file: repo.appendingPathComponent("config/macroengine.yaml").path)
        #expect(config.macrosDirectory == repo.appendingPathComponent("macros").standardizedFileURL.path)
        #expect(config.stateFile == nil)
        #expect(config.timeLimit == .seconds(5))
        #expect(config.logLevel == .info)
        #expect(config.allowEval == false)
        #expect(config.channels == ProgressChannel.rings)
        #expect(config.fsync == .interval)
        #expect(config.fsyncInterval == .seconds(1))
        #expect(config.callDeadline == .seconds(30))
    }

    @Test func relativePathsAreRelativeToTheFile() throws {
        let config = try MacroConfig.parse("macros_dir: m\nstate_file: s/state.json\n", file: "/etc/me/config.yaml")
        #expect(config.macrosDirectory == "/etc/me/m")
        #expect(config.stateFile == "/etc/me/s/state.json")
        #expect(try MacroConfig.parse("macros_dir: /abs", file: "/x/c.yaml").macrosDirectory == "/abs")
    }

    @Test func theHistoryAndAuditBoundsAreReadWithTheirDefaults() throws {
        let defaults = try MacroConfig.parse("# nothing\n", file: "/x/c.yaml")
        #expect(defaults.historyVersions == 100 && defaults.historyBytes == 32 << 20 && defaults.auditEntries == 10_000)
        let config = try MacroConfig.parse("history_versions: 5\nhistory_bytes: 1048576\naudit_entries: 20\n", file: "/x/c.yaml")
        #expect(config.historyVersions == 5 && config.historyBytes == 1 << 20 && config.auditEntries == 20)
    }

    @Test func anEmptyFileIsTheDefaults() throws {
        let config = try MacroConfig.parse("# nothing but a comment\n", file: "/x/c.yaml")
        #expect(config.logFormat == .text)
        #expect(try MacroConfig.parse("log_format: json\n", file: "/x/c.yaml").logFormat == .json)
        #expect(config.channels == ProgressChannel.rings)
        #expect(config.timeLimit == .seconds(5))
    }

    @Test(arguments: [
        (
            "time_limit: 5", ConfigError.Code.unknownKey, "time_limit",
            "unknown key (known keys: macros_dir, state_file, time_limit_ms, log_level, allow_eval, progress, socket, shutdown_grace_ms, max_line_bytes, allowed_uids, engine_eval, queue_limit, call_deadline_ms, fsync, fsync_interval_ms, memory_limit_mb, io_thread, connection_in_flight, connection_buffer_bytes, harden_builtins, stall_grace_ms, stall_quarantine, http, http_allow_remote, log_format, store_limit_bytes, record_runs, runs_kept, failed_runs_kept, runs_bytes, history_versions, history_bytes, audit_entries)"
        ),
        ("progress:\n  - { name: inner, maximum: 3 }", .unknownKey, "progress[0].maximum", "unknown key (known keys: name, min, max, initial)"),
        ("time_limit_ms: soon", .wrongType, "time_limit_ms", "expected an integer"),
        ("allow_eval: 3", .wrongType, "allow_eval", "expected true or false"),
        ("progress: 7", .wrongType, "progress", "expected a list"),
        ("progress:\n  - { name: inner, max: lots }", .wrongType, "progress[0].max", "expected a number"),
        ("progress:\n  - { min: 1 }", .invalidValue, "progress[0].name", "is required"),
        ("time_limit_ms: 0", .invalidValue, "time_limit_ms", "must be between 1 and 86400000, got 0"),
        ("log_level: loud", .invalidValue, "log_level", "must be one of trace, debug, info, notice, warning, error, critical, got 'loud'"),
        ("progress:\n  - { name: a, min: 5, max: 1 }", .invalidValue, "progress[0]", "min must be less than max (got 5.0...1.0)"),
        ("progress:\n  - { name: a }\n  - { name: a }", .invalidValue, "progress[1].name", "channel 'a' is listed twice"),
        ("progress:\n  - { name: 'not ok' }", .invalidValue, "progress[0].name", "'not ok' is not an identifier"),
        ("progress: []", .invalidValue, "progress", "must list at least one channel"),
        ("fsync: sometimes", .invalidValue, "fsync", "must be one of always, interval, never, got 'sometimes'"),
        ("fsync_interval_ms: 0", .invalidValue, "fsync_interval_ms", "must be between 1 and 3600000, got 0"),
        ("io_thread: both", .invalidValue, "io_thread", "must be one of separate, engine, got 'both'"),
        ("log_format: yaml", .invalidValue, "log_format", "must be one of text, json, got 'yaml'"),
        ("connection_in_flight: 0", .invalidValue, "connection_in_flight", "must be between 1 and 65536, got 0"),
        ("connection_buffer_bytes: 1024", .invalidValue, "connection_buffer_bytes", "must be between 65536 and 1073741824, got 1024"),
        ("connection_buffer_bytes: lots", .wrongType, "connection_buffer_bytes", "expected an integer"),
        ("history_versions: 0", .invalidValue, "history_versions", "must be between 1 and 100000, got 0"),
        ("history_bytes: 1000", .invalidValue, "history_bytes", "must be between 65536 and 1099511627776, got 1000"),
        ("audit_entries: 5", .invalidValue, "audit_entries", "must be between 10 and 100000, got 5"),
        ("audit_entries: many", .wrongType, "audit_entries", "expected an integer"),
    ])
    func badConfigsNameTheKeyAndTheFile(_ text: String, _ code: ConfigError.Code, _ key: String, _ message: String) throws {
        let error = try #require(throws: ConfigError.self) { try MacroConfig.parse(text, file: "/cfg/me.yaml") }
        #expect(error.code == code)
        #expect(error.key == key)
        #expect(error.message == message)
        #expect(error.description == "/cfg/me.yaml: key '\(key)': \(message)")
    }

    @Test func syntaxErrorsAndMissingFiles() throws {
        let bad = try #require(throws: ConfigError.self) { try MacroConfig.parse("a: [1, 2\nb: {", file: "/c.yaml") }
        #expect(bad.code == .syntax)
        let missing = try #require(throws: ConfigError.self) { try MacroConfig.load(file: "/nonexistent/c.yaml") }
        #expect(missing.code == .unreadable)
        #expect(missing.description.hasPrefix("/nonexistent/c.yaml: cannot read the file"))
    }
}

@Suite("State file")
struct StateStoreTests {
    @Test func savesAndLoadsAtomically() throws {
        let dir = TemporaryDirectory()
        let store = StateStore(path: dir.url("nested/state.json"))
        #expect(try store.load() == .missing)
        try store.save(["inner": 1.25, "middle": 0, "outer": 10])
        #expect(try store.load() == .loaded(["inner": 1.25, "middle": 0, "outer": 10]))
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.url("nested")) == ["state.json"])
        let mode = try FileManager.default.attributesOfItem(atPath: store.path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
    }

    @Test(arguments: [
        ("{not json", "not valid state JSON"),
        ("", "the file is empty"),
        (#"{"version": 1, "progress": {"inner": "high"}}"#, "not valid state JSON"),
        (#"{"version": 2, "progress": {}}"#, "unknown state file version 2"),
        (#"{"progress": {"inner": 1}}"#, "not valid state JSON"),
        (#"[1, 2]"#, "not valid state JSON"),
        // Truncated, mistyped, binary, out of range.
        (#"{"version": 1, "progress": {"inn"#, "not valid state JSON"),
        (#"{"version": 1, "progress": {"inner": null}}"#, "not valid state JSON"),
        (#"{"version": "1", "progress": {}}"#, "not valid state JSON"),
        (#"{"version": 1, "progress": []}"#, "not valid state JSON"),
        ("\u{0}\u{0}\u{0}\u{0}", "not valid state JSON"),
        (#"{"version": 1, "progress": {"inner": 1e999}}"#, "not valid state JSON"),
    ])
    func corruptFilesAreMovedAsideNeverDeleted(_ contents: String, _ reason: String) throws {
        let dir = TemporaryDirectory()
        let path = try dir.write("state.json", contents)
        let result = try StateStore(path: path).load()
        guard case .corrupt(let found, let movedTo) = result else {
            Issue.record("expected corrupt, got \(result)")
            return
        }
        #expect(found.hasPrefix(reason))
        #expect(!FileManager.default.fileExists(atPath: path))
        #expect(movedTo.hasPrefix(path + ".corrupt-"))
        #expect(try String(contentsOfFile: movedTo, encoding: .utf8) == contents)
        // The next save starts clean and the kept copy stays.
        try StateStore(path: path).save(["inner": 2])
        #expect(try StateStore(path: path).load() == .loaded(["inner": 2]))
        #expect(FileManager.default.fileExists(atPath: movedTo))
    }

    @Test func anUnwritableLocationIsAnIOError() throws {
        let dir = TemporaryDirectory()
        try dir.write("file", "x")
        let error = try #require(throws: MacroError.self) { try StateStore(path: dir.url("file/state.json")).save([:]) }
        #expect(error.code == .io)
    }
}
