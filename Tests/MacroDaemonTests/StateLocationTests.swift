import Foundation
import MacroEngineCore
import MacroRPC
import MacroTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A state location macrod cannot write is reported from the start and makes
/// the shutdown fail (exit 74); journals that cannot be used, and saved values out of range, are
/// named in a warning at start.
@Suite("macrod: the state location and the journal at start and shutdown")
struct StateLocationTests {
    static let bump = ["bump.js": "function(n) { progress.inner += n; return progress.inner }"]

    /// The one `PATH.corrupt-…` beside `path`.
    static func keptCopy(of path: String) -> String? {
        let directory = (path as NSString).deletingLastPathComponent
        let name = (path as NSString).lastPathComponent + ".corrupt-"
        let found = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { $0.hasPrefix(name) }
        return found.count == 1 ? directory + "/" + found[0] : nil
    }

    /// What opening a file for writing in a read-only directory says here (root: a read-only
    /// mount; others: mode 0555).
    static var readOnlyReason: String { String(cString: strerror(getuid() == 0 ? EROFS : EACCES)) }

    @Test(.enabled(if: RestrictedDirectory.readOnlyIsPossible, "needs a read-only directory (root: mount)"))
    func aReadOnlyStateDirectoryIsReportedAtStart() throws {
        let dir = TemporaryDirectory(prefix: "macrod")
        let state = try dir.write("ro/state.json", "{\"version\": 1, \"progress\": {\"inner\": 3, \"middle\": 0, \"outer\": 0}}\n")
        let readOnly = try #require(RestrictedDirectory.readOnly(dir.url("ro")))
        let daemon = try DaemonProcess(files: Self.bump, extraArguments: ["--state", state], dir: dir)
        let expected = "cannot open state journal \(state).journal: \(Self.readOnlyReason)"
        // Before any change: engine.status says so, and the log warned.
        let client = try daemon.client()
        #expect(try client.call("engine.status")["stateError"] == .string(expected))
        #expect(
            daemon.log.contains(
                " warning macrod: cannot save the state: \(expected); found at start. Calls go on; their values are kept in memory only, until the state location can be written (engine.status: stateError)\n"
            ), "\(daemon.log)")
        // Calls go on, and the failure is not logged again at the first change.
        #expect(try client.call("macro.call", ["name": "bump", "args": [1]]) == 4)
        #expect(try client.call("engine.status")["stateError"] == .string(expected))
        #expect(daemon.log.components(separatedBy: "cannot save the state:").count - 1 == 1)
        withExtendedLifetime(readOnly) {}
    }

    /// It logged "cannot save the state" and exited 0: a supervisor saw a clean stop.
    @Test(.enabled(if: RestrictedDirectory.readOnlyIsPossible, "needs a read-only directory (root: mount)"))
    func aShutdownThatCannotSaveTheStateExits74() throws {
        let dir = TemporaryDirectory(prefix: "macrod")
        let state = try dir.write("ro/state.json", "{\"version\": 1, \"progress\": {\"inner\": 3, \"middle\": 0, \"outer\": 0}}\n")
        let readOnly = try #require(RestrictedDirectory.readOnly(dir.url("ro")))
        let daemon = try DaemonProcess(files: Self.bump, extraArguments: ["--state", state], dir: dir)
        #expect(try daemon.client().call("macro.call", ["name": "bump", "args": [1]]) == 4)
        let status = daemon.stop()
        #expect(status == 74, "\(daemon.log)")
        let reason = "cannot create \(dir.url("ro"))/.state.json.tmp-"
        #expect(daemon.log.contains(" error macrod: cannot save the state on shutdown: \(reason)"), "\(daemon.log)")
        #expect(daemon.log.contains(" critical macrod: macrod stopped without saving the state (exit 74): \(reason)"), "\(daemon.log)")
        #expect(!daemon.log.contains("macrod stopped\n"))
        #expect(try String(contentsOfFile: state, encoding: .utf8).contains("\"inner\": 3"))
        withExtendedLifetime(readOnly) {}
    }

    @Test func aBinaryJournalIsMovedAsideWithAWarning() throws {
        let dir = TemporaryDirectory(prefix: "macrod")
        try dir.write("state.json", "{\"version\": 1, \"progress\": {\"inner\": 3, \"middle\": 0, \"outer\": 0}}\n")
        let garbage = Data((0..<512).map { UInt8(truncatingIfNeeded: $0 &* 7919) })
        let journal = try dir.write("state.json.journal", data: garbage)
        let daemon = try DaemonProcess(files: Self.bump, dir: dir)
        let client = try daemon.client()
        #expect(try client.call("progress.get") == ["inner": 3, "middle": 0, "outer": 0])
        let kept = try #require(Self.keptCopy(of: journal))
        #expect(FileManager.default.contents(atPath: kept) == garbage)
        #expect(daemon.log.contains(" warning macrod: state journal \(journal): 3 lines cannot be used (the first, line 1: not JSON: "), "\(daemon.log)")
        #expect(daemon.log.contains("; kept as \(kept) (never deleted); no line is usable: the state file's values are used\n"), "\(daemon.log)")
        #expect(try client.call("macro.call", ["name": "bump", "args": [1]]) == 4)
        #expect(try client.call("engine.status")["stateError"] == .null)
    }

    @Test func aJournalThatIsADirectoryIsMovedAsideWithAWarning() throws {
        let dir = TemporaryDirectory(prefix: "macrod")
        try dir.write("state.json", "{\"version\": 1, \"progress\": {\"inner\": 3, \"middle\": 0, \"outer\": 0}}\n")
        try dir.write("state.json.journal/inside", "kept")
        let journal = dir.url("state.json.journal")
        let daemon = try DaemonProcess(files: Self.bump, dir: dir)
        let client = try daemon.client()
        let kept = try #require(Self.keptCopy(of: journal))
        #expect(
            daemon.log.contains(" warning macrod: the state journal \(journal) is a directory, not a file; kept as \(kept) (never deleted); the state file's values are used\n"),
            "\(daemon.log)")
        #expect(try client.call("macro.call", ["name": "bump", "args": [1]]) == 4)
        #expect(try client.call("engine.status")["stateError"] == .null)
        #expect(try dir.read("state.json.journal") == "{\"inner\":4,\"middle\":0,\"outer\":0}\n")
        #expect(try String(contentsOfFile: kept + "/inside", encoding: .utf8) == "kept")
    }

    @Test func unusableJournalLinesAndOutOfRangeValuesAreWarnedAboutOnce() throws {
        let dir = TemporaryDirectory(prefix: "macrod")
        let state = try dir.write("state.json", "{\"version\": 1, \"progress\": {\"inner\": 42, \"middle\": 0, \"outer\": 0}}\n")
        let journal = try dir.write(
            "state.json.journal",
            """
            {"inner":1,"middle":1,"outer":1}
            garbage
            {"wrong":"keys"}
            {"inner":"5","middle":1,"outer":1}
            {"inner":1e999,"middle":1,"outer":1}
            {"inner":2,"middle":-7,"outer":2}
            {"inner":9,"mid
            """)
        let daemon = try DaemonProcess(files: Self.bump, dir: dir)
        #expect(try daemon.client().call("progress.get") == ["inner": 2, "middle": 0, "outer": 2])
        let kept = try #require(Self.keptCopy(of: journal))
        let lines = daemon.log.split(separator: "\n").filter { $0.contains(" warning ") }.map { String($0.split(separator: " warning ", maxSplits: 1)[1]) }
        #expect(
            lines == [
                "macrod: state journal \(journal): 4 lines cannot be used (the first, line 2: not JSON: unexpected character 'g'); kept as \(kept) (never deleted); the values of its line 6 are used",
                "macrod: state file \(state): the saved value -7 of 'middle' is outside its range 0...10; clamped to 0",
            ], "\(daemon.log)")
    }
}
