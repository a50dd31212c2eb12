import Foundation
import Logging
import MacroBase
import MacroRPC
import MacroTestSupport
import Synchronization
import Testing

@testable import MacroDaemon

#if canImport(Glibc)
import Glibc
#endif

/// What a hostile user or a full disk does to the audit log: a huge value, a file too large to
/// read, one that is no file, a write that fails part way, the file deleted while macrod runs, a
/// lower limit.
@Suite("Audit log under damage")
struct AuditLogDamageTests {
    private static func lines(_ path: String) throws -> [MacroValue] {
        try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map { try JSONParser.parse(String($0)) }
    }

    @Test func anEventNeverHoldsAWholeValueAndStaysUnderItsLineLimit() throws {
        let directory = TemporaryDirectory(prefix: "audit")
        let path = directory.url("a.audit.jsonl")
        let log = AuditLog(path: path, limit: 1000, logger: WarningLog().logger)
        let huge = String(repeating: "x", count: 1_024_000)
        for _ in 1...600 { log.record(.storeEdit, by: AuditActor(.socket, uid: 1, pid: 2), name: "m", details: ["key": "k", "note": .string(huge)]) }
        let cut = String(repeating: "x", count: AuditEvent.detailStringLimit - 32) + "…[cut: 1024000 bytes]"
        #expect(log.recent().last?.details == ["key": "k", "note": .string(cut)])
        #expect(try Self.lines(path).map { $0["details"]["note"] } == Array(repeating: .string(cut), count: 600))
        let size = try #require(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
        #expect(size < 600 * 400)
        // Many fields: each cut, the line bounded whole.
        var wide = OrderedFields()
        for n in 0..<40 { wide["k\(n)"] = .string(String(repeating: "y", count: 100)) }
        let many = log.record(.progressSet, by: .daemon, details: .object(wide))
        #expect(many.details?.objectValue?.count == AuditEvent.detailItemLimit + 1)
        #expect(many.details?["…"] == "[cut: 8 more fields]")
        #expect(many.json.jsonText(pretty: false).utf8.count <= AuditEvent.lineLimit)
        let big = log.record(.progressSet, by: .daemon, details: .object(wide.mapValues { _ in .string(String(repeating: "z", count: 199)) }))
        // {"k0":"zz…",…}: 10 fields of 206 bytes, 30 of 207, 39 commas, 2 braces.
        #expect(big.details == ["cut": "details of 8311 bytes not kept"])
        // A whole value an older macrod wrote is bounded when read back.
        let old = AuditEvent(seq: 603, time: 1, kind: .storeEdit, actor: .daemon, name: "m", details: ["value": .string(huge)])
        _ = try directory.write("a.audit.jsonl", old.json.jsonText(pretty: false) + "\n")
        #expect(AuditLog(path: path, limit: 1000, logger: WarningLog().logger).recent().last?.details == ["value": .string(cut)])
    }

    @Test func aFileTooLargeToReadIsMovedAsideAndNumberingGoesOnAfterItsLastEvent() throws {
        let directory = TemporaryDirectory(prefix: "audit")
        let path = directory.url("a.audit.jsonl")
        do {
            let log = AuditLog(path: path, limit: 100, logger: WarningLog().logger)
            for n in 1...10 { log.record(.progressSet, by: .daemon, details: ["n": .number(Double(n))]) }
        }
        let before = try directory.read("a.audit.jsonl")
        let warnings = WarningLog()
        // Read whole up to 1000 bytes: the file is larger, so its tail is read.
        let log = AuditLog(path: path, limit: 100, logger: warnings.logger, readLimit: 1000)
        #expect(log.recent().map(\.seq) == Array(1...10))
        let aside = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasPrefix("a.audit.jsonl.corrupt-") }
        #expect(aside.count == 1)
        #expect(try directory.read(aside[0]) == before)
        #expect(
            warnings.all == [
                "audit log: cannot read \(path): larger than 1000 bytes; only its last \(before.utf8.count) bytes were read; kept as \(directory.url(aside[0])), a new file starts"
            ])
        #expect(log.record(.configReload, by: AuditActor(.signal)).seq == 11)
        #expect(try Self.lines(path).map { $0["seq"] } == [11])
        #expect(AuditLog(path: path, limit: 100, logger: WarningLog().logger).recent().map(\.seq) == [11])
    }

    @Test func aFileThatCannotBeReadIsMovedAsideAndNumberingGoesOnAfterTheRotatedOne() throws {
        let directory = TemporaryDirectory(prefix: "audit")
        let path = directory.url("a.audit.jsonl")
        do {
            let log = AuditLog(path: path, limit: 3, logger: WarningLog().logger)
            for _ in 1...4 { log.record(.configReload, by: AuditActor(.signal)) }
        }
        // The current file (event 4) is replaced by a directory.
        try FileManager.default.removeItem(atPath: path)
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        let log = AuditLog(path: path, limit: 3, logger: WarningLog().logger)
        #expect(log.recent().map(\.seq) == [1, 2, 3])
        #expect(log.record(.configReload, by: AuditActor(.signal)).seq == 4)
        #expect(PlainFile.kind(path) == .regular)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasPrefix("a.audit.jsonl.corrupt-") }.count == 1)
    }

    /// A writer that follows a plan, one step a call: write all, write half, or fail with ENOSPC.
    private final class FailingWriter: Sendable {
        enum Step { case all, half, full }
        let plan: Mutex<[Step]>
        init(_ plan: [Step]) { self.plan = Mutex(plan) }

        func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int {
            let step = plan.withLock { $0.isEmpty ? .all : $0.removeFirst() }
            switch step {
            case .all: return Glibc.write(fd, bytes.baseAddress, bytes.count)
            case .half: return Glibc.write(fd, bytes.baseAddress, bytes.count / 2)
            case .full:
                errno = ENOSPC
                return -1
            }
        }
    }

    @Test func aWriteThatFailsPartWayLeavesNoHalfLineAndIsLoggedOncePerStreak() throws {
        let directory = TemporaryDirectory(prefix: "audit")
        let path = directory.url("a.audit.jsonl")
        // Event 1 written; 2 half written then the disk is full; 3 not at all; 4 and 5 written.
        let writer = FailingWriter([.all, .half, .full, .full, .all, .all])
        let warnings = WarningLog()
        do {
            let log = AuditLog(path: path, limit: 100, logger: warnings.logger, readLimit: AuditLog.readLimit, writer: writer.write)
            for n in 1...5 { log.record(.progressSet, by: .daemon, details: ["n": .number(Double(n))]) }
            #expect(log.recent().map(\.seq) == [1, 2, 3, 4, 5])
        }
        #expect(
            warnings.all == [
                "audit log: cannot write \(path): No space left on device; events are kept in memory (audit.recent) until writing works again",
                "audit log: writing \(path) again (2 event(s) could not be written)",
            ])
        #expect(try Self.lines(path).map { $0["seq"] } == [1, 4, 5])
        let again = WarningLog()
        let log = AuditLog(path: path, limit: 100, logger: again.logger)
        #expect(log.recent().map(\.seq) == [1, 4, 5])
        #expect(again.all.isEmpty)
        #expect(log.record(.configReload, by: AuditActor(.signal)).seq == 6)
    }

    @Test func aTornLineWithAWholeEventJoinedOnIsReadForThatEvent() throws {
        let directory = TemporaryDirectory(prefix: "audit")
        let path = directory.url("a.audit.jsonl")
        let event = { (seq: Int) in AuditEvent(seq: seq, time: 1, kind: .configReload, actor: AuditActor(.signal)).json.jsonText(pretty: false) }
        _ = try directory.write("a.audit.jsonl", event(1) + "\n" + String(event(2).prefix(20)) + event(3) + "\n")
        let warnings = WarningLog()
        let log = AuditLog(path: path, limit: 100, logger: warnings.logger)
        #expect(log.recent().map(\.seq) == [1, 3])
        #expect(warnings.all == ["audit log: \(path): 1 line(s) could not be understood and were skipped (the first: line 2)"])
        #expect(log.record(.configReload, by: AuditActor(.signal)).seq == 4)
    }

    /// An event number macrod never gave (past 2^53) is skipped: numbering on from it overflowed.
    @Test func anEventNumberPastTwoToTheFiftyThirdIsSkipped() throws {
        let directory = TemporaryDirectory(prefix: "audit")
        let path = directory.url("a.audit.jsonl")
        let event = { (seq: Int) in AuditEvent(seq: seq, time: 1, kind: .configReload, actor: AuditActor(.signal)).json.jsonText(pretty: false) }
        _ = try directory.write("a.audit.jsonl", event(1) + "\n" + event(9_223_372_036_854_774_784) + "\n")
        let log = AuditLog(path: path, limit: 100, logger: WarningLog().logger)
        #expect(log.recent().map(\.seq) == [1])
        #expect(log.record(.configReload, by: AuditActor(.signal)).seq == 2)
    }

    @Test func theFileDeletedWhileInUseIsWrittenAgainAtItsPath() throws {
        let directory = TemporaryDirectory(prefix: "audit")
        let path = directory.url("a.audit.jsonl")
        let warnings = WarningLog()
        let log = AuditLog(path: path, limit: 100, logger: warnings.logger)
        log.record(.configReload, by: AuditActor(.signal))
        log.record(.configReload, by: AuditActor(.signal))
        #expect(unlink(path) == 0)
        log.record(.configReload, by: AuditActor(.signal))
        log.record(.configReload, by: AuditActor(.signal))
        #expect(try Self.lines(path).map { $0["seq"] } == [3, 4])
        #expect(warnings.all == ["audit log: \(path) was deleted or replaced while macrod ran; the next events go to a new file at that path"])
        // Moved away: the same.
        #expect(rename(path, path + ".mine") == 0)
        log.record(.configReload, by: AuditActor(.signal))
        #expect(try Self.lines(path).map { $0["seq"] } == [5])
        #expect(AuditLog(path: path, limit: 100, logger: WarningLog().logger).record(.configReload, by: AuditActor(.signal)).seq == 6)
    }

    @Test func aLowerLimitAppliesAtOnce() throws {
        let directory = TemporaryDirectory(prefix: "audit")
        let path = directory.url("a.audit.jsonl")
        let log = AuditLog(path: path, limit: 10, logger: WarningLog().logger)
        for _ in 1...5 { log.record(.configReload, by: AuditActor(.signal)) }
        log.limit = 3
        #expect(log.recent().map(\.seq) == [3, 4, 5])
        #expect(try Self.lines(path + ".1").map { $0["seq"] } == [1, 2, 3, 4, 5])
        #expect(try directory.read("a.audit.jsonl") == "")
    }
}
