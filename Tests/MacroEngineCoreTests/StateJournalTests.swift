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
