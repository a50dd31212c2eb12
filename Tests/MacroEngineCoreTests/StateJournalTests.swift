import Foundation
import MacroEngineCore
import MacroTestSupport
import Testing

@Suite("State journal")
struct StateJournalTests {
    @Test func theLastJournalLineWinsOverTheSnapshot() throws {
        let dir = TemporaryDirectory(prefix: "journal")
        let store = StateStore(path: dir.url("state.json"))
        try store.save(["inner": 1, "middle": 2, "outer": 3])
        let journal = StateJournal(store: store)
        try journal.append(["inner": 4, "middle": 2, "outer": 3], durable: false)
        try journal.append(["inner": 4.5, "middle": 0.25, "outer": 3], durable: true)
        #expect(try dir.read("state.json.journal") == "{\"inner\":4,\"middle\":2,\"outer\":3}\n{\"inner\":4.5,\"middle\":0.25,\"outer\":3}\n")
        #expect(try store.load() == .loaded(["inner": 4.5, "middle": 0.25, "outer": 3]))
        try journal.sync()
        // Closing folds the journal into the snapshot and removes it.
        try journal.close(saving: ["inner": 5, "middle": 0.25, "outer": 3])
        #expect(!FileManager.default.fileExists(atPath: dir.url("state.json.journal")))
        #expect(try store.load() == .loaded(["inner": 5, "middle": 0.25, "outer": 3]))
    }

    @Test func aTornLastLineIsIgnoredAndTheNextAppendStartsOnANewLine() throws {
        let dir = TemporaryDirectory(prefix: "journal")
        let store = StateStore(path: dir.url("state.json"))
        try dir.write("state.json.journal", "{\"inner\":1,\"middle\":1,\"outer\":1}\n{\"inner\":9,\"mid")
        #expect(try store.load() == .loaded(["inner": 1, "middle": 1, "outer": 1]))
        let journal = StateJournal(store: store)
        try journal.append(["inner": 2, "middle": 1, "outer": 1], durable: false)
        #expect(try store.load() == .loaded(["inner": 2, "middle": 1, "outer": 1]))
        // Lines that are not values (or not finite) are skipped; an older valid one is used.
        try dir.write("state.json.journal", "{\"inner\":3,\"middle\":3,\"outer\":3}\n[1]\n{\"inner\":1e999}\n")
        #expect(try store.load() == .loaded(["inner": 3, "middle": 3, "outer": 3]))
    }

    @Test func aLongJournalIsFoldedIntoTheSnapshot() throws {
        let dir = TemporaryDirectory(prefix: "journal")
        let store = StateStore(path: dir.url("state.json"))
        let journal = StateJournal(store: store)
        let lineLength = "{\"inner\":1234,\"middle\":0,\"outer\":0}\n".utf8.count
        let appends = StateJournal.compactionBytes / lineLength + 10
        for i in 0..<appends { try journal.append(["inner": Double(1000 + i % 9000), "middle": 0, "outer": 0], durable: false) }
        let size = try FileManager.default.attributesOfItem(atPath: dir.url("state.json.journal"))[.size] as? Int
        #expect(size.map { $0 < StateJournal.compactionBytes } == true)
        #expect(try store.load() == .loaded(["inner": Double(1000 + (appends - 1) % 9000), "middle": 0, "outer": 0]))
    }

    @Test func anUnwritableJournalThrowsNamingItAndLeavesTheSnapshot() throws {
        let dir = TemporaryDirectory(prefix: "journal")
        try dir.write("blocker", "not a directory")
        let journal = StateJournal(store: StateStore(path: dir.url("blocker/state.json")))
        let error = try #require(throws: MacroError.self) { try journal.append(["inner": 1], durable: false) }
        #expect(error.message.contains("blocker") == true)
        #expect(try dir.read("blocker") == "not a directory")
    }
}

@Suite("State journal, removed under the daemon")
struct StateJournalRemovedTests {
    @Test func aJournalRemovedByAnotherWriterIsStartedAgain() throws {
        let dir = TemporaryDirectory(prefix: "journal")
        let store = StateStore(path: dir.url("state.json"))
        // Checked at every append here (macrod checks at most every 100 ms: no fstat per append).
        let journal = StateJournal(store: store, removalCheck: 0)
        try journal.append(["inner": 1], durable: false)
        // Another writer (macro run --local) saves the file and removes the journal.
        try store.save(["inner": 5])
        try journal.append(["inner": 6], durable: false)
        #expect(try dir.read("state.json.journal") == "{\"inner\":6}\n")
        #expect(try store.load() == .loaded(["inner": 6]))
    }
}

/// Journals and state files that are not what they should be are named in a
/// warning or an error that says what they are and what was done, and nothing is deleted.
@Suite("State journal and state file, hostile files")
struct StateHostileFileTests {
    /// The one `PATH.corrupt-…` file beside `path` (nil: none or several).
    static func keptCopy(of path: String) -> String? {
        let directory = (path as NSString).deletingLastPathComponent
        let name = (path as NSString).lastPathComponent + ".corrupt-"
        let found = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { $0.hasPrefix(name) }
        return found.count == 1 ? directory + "/" + found[0] : nil
    }

    @Test func unusableJournalLinesAreNamedOnceAndTheJournalIsKeptAside() throws {
        let dir = TemporaryDirectory(prefix: "journal")
        let store = StateStore(path: dir.url("state.json"))
        try store.save(["inner": 0, "middle": 0, "outer": 0])
        let journal = """
            {"inner":1,"middle":1,"outer":1}
            garbage
            {"inner":"x","middle":1,"outer":1}
            {"inner":1e999,"middle":1,"outer":1}
            {"inner":2,"middle":2,"outer":2}
            {"inner":9,"mid
            """
        try dir.write("state.json.journal", journal)
        var warnings: [StateWarning] = []
        #expect(try store.load(warnings: &warnings) == .loaded(["inner": 2, "middle": 2, "outer": 2]))
        let kept = try #require(Self.keptCopy(of: store.journalPath))
        #expect(
            warnings.map(\.message) == [
                "state journal \(store.journalPath): 3 lines cannot be used (the first, line 2: not JSON: unexpected character 'g'); kept as \(kept) (never deleted); the values of its line 5 are used"
            ])
        #expect(warnings.map(\.code) == [.journalMovedAside])
        #expect(try String(contentsOfFile: kept, encoding: .utf8) == journal)
        #expect(!FileManager.default.fileExists(atPath: store.journalPath))
        // The values of the kept journal live on in the state file; the next load is quiet.
        warnings = []
        #expect(try store.load(warnings: &warnings) == .loaded(["inner": 2, "middle": 2, "outer": 2]))
        #expect(warnings.isEmpty)
    }

    @Test func aTornLastLineIsStillNoProblem() throws {
        let dir = TemporaryDirectory(prefix: "journal")
        let store = StateStore(path: dir.url("state.json"))
        try dir.write("state.json.journal", "{\"inner\":1,\"middle\":1,\"outer\":1}\n{\"inner\":9,\"mid")
        var warnings: [StateWarning] = []
        #expect(try store.load(warnings: &warnings) == .loaded(["inner": 1, "middle": 1, "outer": 1]))
        #expect(warnings.isEmpty)
        #expect(FileManager.default.fileExists(atPath: store.journalPath))
    }

    @Test func aBinaryJournalIsMovedAsideWithAWarning() throws {
        let dir = TemporaryDirectory(prefix: "journal")
        let store = StateStore(path: dir.url("state.json"))
        try store.save(["inner": 3, "middle": 0, "outer": 0])
        let garbage = Data([0x00, 0xFF, 0x13, 0x37, 0x7B, 0x01, 0xC3, 0x28])
        try dir.write("state.json.journal", data: garbage)
        var warnings: [StateWarning] = []
        #expect(try store.load(warnings: &warnings) == .loaded(["inner": 3, "middle": 0, "outer": 0]))
        let kept = try #require(Self.keptCopy(of: store.journalPath))
        #expect(
            warnings.map(\.message) == [
                "state journal \(store.journalPath): line 1 cannot be used (an unfinished last line that is not the start of one (binary data?)); kept as \(kept) (never deleted); no line is usable: the state file's values are used"
            ])
        #expect(FileManager.default.contents(atPath: kept) == garbage)
    }

    @Test func aJournalThatIsADirectoryIsMovedAsideWithAWarning() throws {
        let dir = TemporaryDirectory(prefix: "journal")
        let store = StateStore(path: dir.url("state.json"))
        try store.save(["inner": 3, "middle": 0, "outer": 0])
        try dir.write("state.json.journal/inside", "kept")
        var warnings: [StateWarning] = []
        #expect(try store.load(warnings: &warnings) == .loaded(["inner": 3, "middle": 0, "outer": 0]))
        let kept = try #require(Self.keptCopy(of: store.journalPath))
        #expect(
            warnings.map(\.message) == [
                "the state journal \(store.journalPath) is a directory, not a file; kept as \(kept) (never deleted); the state file's values are used"
            ])
        #expect(try String(contentsOfFile: kept + "/inside", encoding: .utf8) == "kept")
        // The journal works again.
        try StateJournal(store: store).append(["inner": 4, "middle": 0, "outer": 0], durable: false)
        #expect(try store.load() == .loaded(["inner": 4, "middle": 0, "outer": 0]))
    }

    @Test func aSymlinkedJournalIsNeitherReadNorWritten() throws {
        let dir = TemporaryDirectory(prefix: "journal")
        let store = StateStore(path: dir.url("state.json"))
        try store.save(["inner": 3, "middle": 0, "outer": 0])
        let elsewhere = try dir.write("elsewhere", "{\"inner\":9,\"middle\":9,\"outer\":9}\n")
        #expect(symlink(elsewhere, store.journalPath) == 0)
        var warnings: [StateWarning] = []
        #expect(try store.load(warnings: &warnings) == .loaded(["inner": 3, "middle": 0, "outer": 0]))
        #expect(
            warnings.map(\.message) == [
                "the state journal \(store.journalPath) is a symbolic link; not following it: ignored, and nothing is written through it (remove it)"
            ])
        let error = try #require(throws: MacroError.self) {
            try StateJournal(store: store).append(["inner": 4, "middle": 0, "outer": 0], durable: false)
        }
        #expect(error.message == "cannot open state journal \(store.journalPath): it is a symbolic link, which is not followed (remove it)")
        #expect(error.code == .io)
        #expect(try dir.read("elsewhere") == "{\"inner\":9,\"middle\":9,\"outer\":9}\n")
    }

    @Test func aFIFOIsNamedAsNotARegularFile() throws {
        let dir = TemporaryDirectory(prefix: "journal")
        let store = StateStore(path: dir.url("state.json"))
        #expect(mkfifo(store.journalPath, 0o600) == 0)
        let error = try #require(throws: MacroError.self) {
            try StateJournal(store: store).append(["inner": 4, "middle": 0, "outer": 0], durable: false)
        }
        #expect(error.message == "cannot open state journal \(store.journalPath): it is a FIFO, not a regular file")
        #expect(mkfifo(store.path, 0o600) == 0)
        let read = try #require(throws: MacroError.self) { try store.load() }
        #expect(read.message == "cannot read state file \(store.path): it is a FIFO, not a regular file")
    }

    @Test func aStateFileThatIsADirectorySaysSo() throws {
        let dir = TemporaryDirectory(prefix: "journal")
        let store = StateStore(path: dir.url("state.json"))
        try FileManager.default.createDirectory(atPath: store.path, withIntermediateDirectories: true)
        let error = try #require(throws: MacroError.self) { try store.load() }
        #expect(error.message == "cannot read state file \(store.path): it is a directory, not a regular file; state_file (--state) names a file, e.g. \(store.path)/state.json")
        #expect(!error.message.contains("NSCocoaErrorDomain"))
    }

    @Test func outOfRangeAndUnknownSavedValuesAreNamed() throws {
        let dir = TemporaryDirectory(prefix: "journal")
        let store = StateStore(path: dir.url("state.json"))
        try store.save(["inner": 42, "middle": -1.5, "outer": 5, "sideways": 2])
        let model = ProgressModel()
        var warnings: [StateWarning] = []
        try store.restore(into: model, warnings: &warnings)
        #expect(
            warnings.map(\.message) == [
                "state file \(store.path): the saved value 42 of 'inner' is outside its range 0...10; clamped to 10",
                "state file \(store.path): the saved value -1.5 of 'middle' is outside its range 0...10; clamped to 0",
                "state file \(store.path): no progress channel is named 'sideways' (channels: inner, middle, outer); its saved value 2 is dropped",
            ])
        #expect(model.valuesByName == ["inner": 10, "middle": 0, "outer": 5])
    }

    /// A full disk: the journal line is written only in part, which sets no errno. It said
    /// "short write …: Success"; it says how much was written and why that may be.
    @Test(.enabled(if: RestrictedDirectory.tmpfsIsPossible, "needs root and mount (a 64 KiB tmpfs)"))
    func aFullDiskIsAShortWriteNotSuccess() throws {
        let dir = TemporaryDirectory(prefix: "journal")
        let mount = try #require(RestrictedDirectory.tmpfs(dir.path, kibibytes: 64))
        let store = StateStore(path: dir.url("state.json"))
        // A journal 10 bytes short of a whole page, then nothing else left on the file system.
        let line = "{\"inner\":1,\"middle\":1,\"outer\":1}\n"
        let start = String(repeating: line, count: 4086 / line.utf8.count) + String(repeating: " ", count: 4086 % line.utf8.count - 1) + "\n"
        try dir.write("state.json.journal", start)
        let filler = open(dir.url("filler"), O_WRONLY | O_CREAT, 0o600)
        let page = [UInt8](repeating: 0x41, count: 4096)
        while write(filler, page, page.count) > 0 {}
        close(filler)
        let journal = StateJournal(store: store)
        let error = try #require(throws: MacroError.self) {
            try journal.append(["inner": 2, "middle": 2, "outer": 2], durable: false)
        }
        #expect(error.message == "short write to \(store.journalPath) (10 of 33 bytes; disk full?)")
        // The part that was written is taken back: the journal is as it was.
        #expect(try dir.read("state.json.journal") == start)
        withExtendedLifetime(mount) {}
    }
}
