import Foundation
import MacroBase
import MacroEngineCore
import MacroTestSupport
import Testing

/// The stores' snapshot and journal beside the state file.
@Suite("The store journal")
struct StoreJournalTests {
    private static func changes(_ store: MacroStore, _ body: (MacroStore) throws -> Void) rethrows -> [StoreChange] {
        try body(store)
        return store.takeUnjournaled()
    }

    @Test func appendedChangesAreLoadedBackInOrder() throws {
        let directory = TemporaryDirectory(prefix: "store-journal")
        let journal = StoreJournal(stateFile: directory.url("state.json"))
        let store = MacroStore()
        store.recordChanges()
        try journal.append(
            try Self.changes(store) {
                try $0.set("a", "k", json: "1"); try $0.set("a", "j", json: #"{"x":[1,2]}"#)
            }, store: store, durable: false)
        try journal.append(
            try Self.changes(store) {
                try $0.set("a", "k", json: "2"); $0.delete("a", "j"); try $0.set("b", "q", json: #""é""#)
            }, store: store, durable: true)
        #expect(try directory.read("state.json.store.journal") == #"[["a","j",{"x":[1,2]}],["a","k",1]]"# + "\n" + #"[["a","j"],["a","k",2],["b","q","é"]]"# + "\n")
        var warnings: [StateWarning] = []
        #expect(StoreJournal(stateFile: directory.url("state.json")).load(warnings: &warnings) == ["a": ["k": "2"], "b": ["q": #""é""#]])
        #expect(warnings.isEmpty)
    }

    @Test func aTornLastLineIsIgnored() throws {
        let directory = TemporaryDirectory(prefix: "store-journal")
        _ = try directory.write("state.json.store.journal", #"[["a","k",1]]"# + "\n" + #"[["a","k",2"#)
        var warnings: [StateWarning] = []
        #expect(StoreJournal(stateFile: directory.url("state.json")).load(warnings: &warnings) == ["a": ["k": "1"]])
        #expect(warnings.isEmpty)
    }

    @Test func aBadLineMovesTheJournalAsideKeepingWhatCameBefore() throws {
        let directory = TemporaryDirectory(prefix: "store-journal")
        _ = try directory.write("state.json.store.journal", #"[["a","k",1]]"# + "\n" + "garbage\n" + #"[["a","k",3]]"# + "\n")
        var warnings: [StateWarning] = []
        #expect(StoreJournal(stateFile: directory.url("state.json")).load(warnings: &warnings) == ["a": ["k": "1"]])
        #expect(warnings.map(\.code) == [.journalMovedAside])
        #expect(warnings.first?.message.contains("line 2 cannot be used") == true)
        let kept = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasPrefix("state.json.store.journal.corrupt-") }
        #expect(kept.count == 1)
        // What was used lives on in the snapshot.
        var again: [StateWarning] = []
        #expect(StoreJournal(stateFile: directory.url("state.json")).load(warnings: &again) == ["a": ["k": "1"]])
        #expect(again.isEmpty)
    }

    @Test func closeWritesTheSnapshotAndRemovesTheJournal() throws {
        let directory = TemporaryDirectory(prefix: "store-journal")
        let journal = StoreJournal(stateFile: directory.url("state.json"))
        let store = MacroStore()
        store.recordChanges()
        try journal.append(try Self.changes(store) { try $0.set("m", "k", json: "[1]") }, store: store, durable: false)
        try journal.close(saving: store.all)
        #expect(!FileManager.default.fileExists(atPath: directory.url("state.json.store.journal")))
        #expect(try directory.read("state.json.store.json") == "{\"version\":1,\"stores\":{\n\"m\":{\"k\":[1]}}}\n")
        var warnings: [StateWarning] = []
        #expect(StoreJournal(stateFile: directory.url("state.json")).load(warnings: &warnings) == ["m": ["k": "[1]"]])
    }

    @Test func aGrownJournalIsFoldedIntoTheSnapshot() throws {
        let directory = TemporaryDirectory(prefix: "store-journal")
        let journal = StoreJournal(stateFile: directory.url("state.json"))
        let store = MacroStore()
        store.recordChanges()
        let big = "\"" + String(repeating: "x", count: 100_000) + "\""
        for i in 0..<12 {
            try journal.append(try Self.changes(store) { try $0.set("m", "k\(i % 3)", json: big) }, store: store, durable: false)
        }
        let size = try FileManager.default.attributesOfItem(atPath: directory.url("state.json.store.journal"))[.size] as! Int
        #expect(size < StoreJournal.compactionBytes)
        var warnings: [StateWarning] = []
        #expect(StoreJournal(stateFile: directory.url("state.json")).load(warnings: &warnings) == ["m": ["k0": big, "k1": big, "k2": big]])
        #expect(warnings.isEmpty)
    }

    @Test func aSymbolicLinkIsNotFollowed() throws {
        let directory = TemporaryDirectory(prefix: "store-journal")
        _ = try directory.write("elsewhere", #"[["a","k",1]]"# + "\n")
        try FileManager.default.createSymbolicLink(atPath: directory.url("state.json.store.journal"), withDestinationPath: directory.url("elsewhere"))
        var warnings: [StateWarning] = []
        #expect(StoreJournal(stateFile: directory.url("state.json")).load(warnings: &warnings) == [:])
        #expect(warnings.map(\.code) == [.journalUnreadable])
        let store = MacroStore()
        store.recordChanges()
        #expect(throws: MacroError.self) {
            try StoreJournal(stateFile: directory.url("state.json")).append([StoreChange(macro: "a", key: "k", json: "2")], store: store, durable: false)
        }
        #expect(try directory.read("elsewhere") == #"[["a","k",1]]"# + "\n")
    }
}
