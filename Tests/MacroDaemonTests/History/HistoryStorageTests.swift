import Foundation
import Logging
import MacroBase
import MacroTestSupport
import Synchronization
import Testing

@testable import MacroDaemon

/// The warnings a part logs, for tests that check what it says.
final class WarningLog: LogHandler, Sendable {
    let messages = Mutex<[String]>([])
    var metadata: Logger.Metadata {
        get { [:] }
        set {}
    }
    var logLevel: Logger.Level {
        get { .warning }
        set {}
    }
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { nil }
        set {}
    }
    func log(event: LogEvent) { messages.withLock { $0.append("\(event.message)") } }

    var logger: Logger { Logger(label: "test") { _ in self } }
    var all: [String] { messages.withLock { $0 } }
}

/// The history's files: content addresses, numbering, retention by count and by bytes, a corrupt
/// index, a symlink, the audit log's bounds across a restart, and the diff's text.
@Suite("Version history and audit log storage")
struct HistoryStorageTests {
    private static func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    @Test func sha256MatchesTheStandardVectors() {
        #expect(SHA256.hex([]) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(SHA256.hex(Self.bytes("abc")) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(
            SHA256.hex(Self.bytes("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"))
                == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
    }

    @Test func versionsAreNumberedFromOneAndAnUnchangedContentIsNotKeptAgain() throws {
        let directory = TemporaryDirectory(prefix: "history")
        let store = VersionStore(directory: directory.url("state.json.history"), limits: HistoryLimits(), logger: WarningLog().logger)
        let first = try #require(store.record("bump", content: Self.bytes("v1"), who: "socket uid 1000 pid 7", time: 10))
        #expect(first.version.number == 1 && first.previous == nil)
        #expect(store.record("bump", content: Self.bytes("v1"), who: "file", time: 11) == nil)
        let second = try #require(store.record("bump", content: Self.bytes("v2"), who: "file uid 1000", time: 12))
        #expect(second.version.number == 2 && second.previous?.hash == first.version.hash)
        #expect(store.versions(of: "bump").map(\.number) == [1, 2])
        #expect(try store.content(of: "bump", number: 1) == Self.bytes("v1"))
        #expect(first.version.hash == SHA256.hex(Self.bytes("v1")))
        // The index and the objects are read back by the next process.
        let again = VersionStore(directory: directory.url("state.json.history"), limits: HistoryLimits(), logger: WarningLog().logger)
        #expect(again.versions(of: "bump") == store.versions(of: "bump"))
        #expect(throws: HistoryError(.noSuchVersion, "bump has no version 3 (kept: 1 to 2)")) { try again.content(of: "bump", number: 3) }
        #expect(throws: HistoryError(.noHistory, "fill has no kept versions")) { try again.content(of: "fill", number: 1) }
    }

    @Test func retentionByCountKeepsTheNewestVersionsWithTheirNumbersAndDropsUnusedObjects() throws {
        let directory = TemporaryDirectory(prefix: "history")
        let store = VersionStore(directory: directory.url("h"), limits: HistoryLimits(versions: 3), logger: WarningLog().logger)
        for n in 1...5 { store.record("bump", content: Self.bytes("version \(n)"), who: "file", time: Double(n)) }
        #expect(store.versions(of: "bump").map(\.number) == [3, 4, 5])
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url("h/objects")).count == 3)
        #expect(try store.content(of: "bump", number: 3) == Self.bytes("version 3"))
    }

    @Test func retentionByBytesDropsTheOldestVersionsButNeverAFilesNewest() throws {
        let directory = TemporaryDirectory(prefix: "history")
        // Each content is 10 bytes; 30 bytes in all are allowed.
        let store = VersionStore(directory: directory.url("h"), limits: HistoryLimits(versions: 100, bytes: 30), logger: WarningLog().logger)
        store.record("a", content: Self.bytes("aaaaaaaaa1"), who: "file", time: 1)
        store.record("b", content: Self.bytes("bbbbbbbbb1"), who: "file", time: 2)
        store.record("a", content: Self.bytes("aaaaaaaaa2"), who: "file", time: 3)
        #expect(store.totalBytes == 30)
        store.record("a", content: Self.bytes("aaaaaaaaa3"), who: "file", time: 4)
        #expect(store.versions(of: "a").map(\.number) == [2, 3])
        #expect(store.versions(of: "b").map(\.number) == [1])
        #expect(store.totalBytes == 30)
        // Past the limit with only newest versions left: they stay.
        store.limits = HistoryLimits(versions: 100, bytes: 5)
        store.record("b", content: Self.bytes("bbbbbbbbb2"), who: "file", time: 5)
        #expect(store.versions(of: "a").map(\.number) == [3])
        #expect(store.versions(of: "b").map(\.number) == [2])
        // What retention took from another file's index is gone from its file on disk too.
        let again = VersionStore(directory: directory.url("h"), limits: HistoryLimits(), logger: WarningLog().logger)
        #expect(again.versions(of: "a") == store.versions(of: "a") && again.versions(of: "b") == store.versions(of: "b"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url("h/objects")).count == 2)
    }

    @Test func aCorruptIndexIsMovedAsideWithAWarningAndOnlyItsFilesHistoryStartsAgain() throws {
        let directory = TemporaryDirectory(prefix: "history")
        do {
            let store = VersionStore(directory: directory.url("h"), limits: HistoryLimits(), logger: WarningLog().logger)
            store.record("bump", content: Self.bytes("b1"), who: "file", time: 1)
            store.record("lib/rings", content: Self.bytes("r1"), who: "file", time: 2)
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url("h/index")).sorted() == ["bump.json", "lib.rings.json"])
        let torn = "{\"format\": 1, \"name\": \"bump\", \"versions\": [{\"n\": 1, \"hash\""
        _ = try directory.write("h/index/bump.json", torn)
        let log = WarningLog()
        let store = VersionStore(directory: directory.url("h"), limits: HistoryLimits(), logger: log.logger)
        #expect(store.names == ["lib/rings"])
        let kept = try FileManager.default.contentsOfDirectory(atPath: directory.url("h/index")).filter { $0.hasPrefix("bump.json.corrupt-") }
        #expect(kept.count == 1)
        #expect(try directory.read("h/index/\(kept[0])") == torn)
        #expect(log.all.count == 1)
        #expect(log.all.first?.hasPrefix("version history: \(directory.url("h/index/bump.json")) is not a history index (") == true)
        #expect(log.all.first?.hasSuffix("; kept as \(directory.url("h/index/\(kept[0])")), this file's history starts again") == true)
        #expect(store.record("bump", content: Self.bytes("b2"), who: "file", time: 3)?.version.number == 1)
        #expect(store.versions(of: "lib/rings").map(\.number) == [1])
    }

    /// A version number macrod never gave (past 2^53) in an index is skipped: counting on from
    /// 2^63 - 1024 overflowed and stopped macrod about 1,030 saves later.
    @Test func aVersionNumberPastTwoToTheFiftyThirdIsSkipped() throws {
        let directory = TemporaryDirectory(prefix: "history")
        do {
            let store = VersionStore(directory: directory.url("h"), limits: HistoryLimits(), logger: WarningLog().logger)
            store.record("bump", content: Self.bytes("b1"), who: "file", time: 1)
        }
        let index = try directory.read("h/index/bump.json")
        let forged = index.replacingOccurrences(of: #""n":1,"#, with: #""n":9223372036854774784,"#)
        try #require(forged != index, "\(index)")
        _ = try directory.write("h/index/bump.json", forged)
        let store = VersionStore(directory: directory.url("h"), limits: HistoryLimits(), logger: WarningLog().logger)
        #expect(store.versions(of: "bump").isEmpty)
        #expect(store.record("bump", content: Self.bytes("b2"), who: "file", time: 2)?.version.number == 1)
    }

    @Test func aVersionWhoseObjectIsMissingIsDroppedAndADamagedObjectIsAnError() throws {
        let directory = TemporaryDirectory(prefix: "history")
        let store = VersionStore(directory: directory.url("h"), limits: HistoryLimits(), logger: WarningLog().logger)
        let one = try #require(store.record("bump", content: Self.bytes("v1"), who: "file", time: 1))
        let two = try #require(store.record("bump", content: Self.bytes("v2"), who: "file", time: 2))
        _ = try directory.write("h/objects/\(two.version.hash)", "tampered")
        #expect(throws: HistoryError(.corrupt, "bump@2: its content (\(directory.url("h/objects/\(two.version.hash)"))) does not match its hash; it was changed or damaged")) {
            try store.content(of: "bump", number: 2)
        }
        try FileManager.default.removeItem(atPath: directory.url("h/objects/\(one.version.hash)"))
        let log = WarningLog()
        let again = VersionStore(directory: directory.url("h"), limits: HistoryLimits(), logger: log.logger)
        #expect(again.versions(of: "bump").map(\.number) == [2])
        #expect(log.all == ["version history: \(directory.url("h/index/bump.json")): 1 version(s) whose content is missing from \(directory.url("h/objects")) were dropped"])
    }

    @Test func aDamagedObjectIsWrittenAgainWhenItsContentIsKeptAgain() throws {
        let directory = TemporaryDirectory(prefix: "history")
        let store = VersionStore(directory: directory.url("h"), limits: HistoryLimits(), logger: WarningLog().logger)
        let one = try #require(store.record("bump", content: Self.bytes("v1"), who: "file", time: 1))
        store.record("bump", content: Self.bytes("v2"), who: "file", time: 2)
        // Same size, other bytes; then a longer file.
        for damage in ["x1", "v1 and more"] {
            _ = try directory.write("h/objects/\(one.version.hash)", damage)
            #expect(throws: HistoryError.self) { try store.content(of: "bump", number: 1) }
            let again = try #require(store.record("bump", content: Self.bytes("v1"), who: "file", time: 3))
            #expect(try store.content(of: "bump", number: again.version.number) == Self.bytes("v1"))
            #expect(try store.content(of: "bump", number: 1) == Self.bytes("v1"))
            store.record("bump", content: Self.bytes("v2"), who: "file", time: 4)
        }
        #expect(store.versions(of: "bump").map(\.number) == [1, 2, 3, 4, 5, 6])
    }

    @Test func aLibFileWithALongNameKeepsItsVersionsAcrossARestart() throws {
        let directory = TemporaryDirectory(prefix: "history")
        let names = ["lib/" + String(repeating: "k", count: 200), "lib/" + String(repeating: "q", count: 250)]
        do {
            let store = VersionStore(directory: directory.url("h"), limits: HistoryLimits(), logger: WarningLog().logger)
            for name in names { store.record(name, content: Self.bytes(name), who: "file", time: 1) }
        }
        let log = WarningLog()
        let again = VersionStore(directory: directory.url("h"), limits: HistoryLimits(), logger: log.logger)
        #expect(again.names == names)
        #expect(try names.map { String(decoding: try again.content(of: $0, number: 1), as: UTF8.self) } == names)
        #expect(log.all == [])
    }

    @Test func lowerRetentionLimitsApplyWhenSetNotAtTheNextVersion() throws {
        let directory = TemporaryDirectory(prefix: "history")
        let store = VersionStore(directory: directory.url("h"), limits: HistoryLimits(), logger: WarningLog().logger)
        for n in 1...4 { store.record("bump", content: Self.bytes("version \(n)"), who: "file", time: Double(n)) }
        store.limits = HistoryLimits(versions: 2)
        #expect(store.versions(of: "bump").map(\.number) == [3, 4])
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url("h/objects")).count == 2)
        #expect(VersionStore(directory: directory.url("h"), limits: HistoryLimits(), logger: WarningLog().logger).versions(of: "bump").map(\.number) == [3, 4])
    }

    @Test func aHistoryDirectoryThatIsASymlinkIsNotFollowed() throws {
        let directory = TemporaryDirectory(prefix: "history")
        try FileManager.default.createDirectory(atPath: directory.url("elsewhere"), withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: directory.url("h"), withDestinationPath: directory.url("elsewhere"))
        let log = WarningLog()
        let store = VersionStore(directory: directory.url("h"), limits: HistoryLimits(), logger: log.logger)
        #expect(store.record("bump", content: Self.bytes("v1"), who: "file", time: 1) == nil)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url("elsewhere")).isEmpty)
        #expect(log.all == ["version history off: \(directory.url("h")) is not a directory (a symlink or a file is not followed)"])
    }

    @Test func theAuditLogIsBoundedAndReadBackAfterARestart() throws {
        let directory = TemporaryDirectory(prefix: "audit")
        let path = directory.url("state.json.audit.jsonl")
        do {
            let log = AuditLog(path: path, limit: 10, logger: WarningLog().logger)
            for n in 1...25 { log.record(.progressSet, by: AuditActor(.socket, uid: 1000, pid: Int32(n)), details: ["n": .number(Double(n))]) }
            #expect(log.recent().map(\.seq) == Array(16...25))
            #expect(log.recent(limit: 2).map(\.seq) == [24, 25])
        }
        // 25 events with 10 a file: .1 holds 11...20, the file 21...25.
        #expect(try String(contentsOfFile: path + ".1", encoding: .utf8).split(separator: "\n").count == 10)
        #expect(try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").count == 5)
        // A torn last line (a crash mid-write) is skipped with a warning; the next event starts a line of its own.
        let handle = try #require(FileHandle(forWritingAtPath: path))
        handle.seekToEndOfFile()
        handle.write(Data("{\"seq\": 26, \"ti".utf8))
        handle.closeFile()
        let warnings = WarningLog()
        let log = AuditLog(path: path, limit: 10, logger: warnings.logger)
        #expect(log.recent().map(\.seq) == Array(16...25))
        #expect(log.recent().last?.actor == AuditActor(.socket, uid: 1000, pid: 25))
        #expect(log.recent().last?.details == ["n": 25])
        #expect(warnings.all == ["audit log: \(path): 1 line(s) could not be understood and were skipped (the first: line 6)"])
        let next = log.record(.configReload, by: AuditActor(.signal))
        #expect(next.seq == 26)
        #expect(AuditLog(path: path, limit: 10, logger: WarningLog().logger).recent().map(\.seq) == Array(17...26))
    }

    @Test func theDiffIsUnifiedWithThreeLinesOfContext() {
        let old = "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n"
        let new = "a\nB\nc\nd\ne\nf\ng\nh\ni\nj\nk\n"
        #expect(
            LineDiff.unified(old, new, oldLabel: "bump@1", newLabel: "bump@2") == """
                --- bump@1
                +++ bump@2
                @@ -1,5 +1,5 @@
                 a
                -b
                +B
                 c
                 d
                 e
                @@ -8,3 +8,4 @@
                 h
                 i
                 j
                +k

                """)
        #expect(LineDiff.unified(old, old, oldLabel: "x", newLabel: "y") == "")
        #expect(LineDiff.unified("", "one\n", oldLabel: "x@1", newLabel: "x@2") == "--- x@1\n+++ x@2\n@@ -0,0 +1 @@\n+one\n")
    }
}
