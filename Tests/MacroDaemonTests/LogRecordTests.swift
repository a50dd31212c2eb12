import Foundation
import MacroEngineCore
import MacroRPC
import MacroTestSupport
import Testing

/// The daemon's log as people and tools read it: times, a stable key order with the message
/// first and the stack last, reloads logged, the record count README promises.
@Suite("macrod log records")
struct LogRecordTests {
    static let files = [
        "deep.js": "function() {\n  function inner() { throw new TypeError('bad ' + 1) }\n  inner();\n}",
        "bump.js": "function() { return 1 }",
        "talk.js": "function(n) { console.log('line', n) }",
    ]

    static func milliseconds(_ time: String) -> Int64? {
        // 2026-11-22T07:28:02.926Z
        let pattern = #/^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})\.(\d{3})Z$/#
        guard let m = time.wholeMatch(of: pattern) else { return nil }
        var parts = DateComponents()
        parts.timeZone = TimeZone(identifier: "UTC")
        (parts.year, parts.month, parts.day) = (Int(m.1), Int(m.2), Int(m.3))
        (parts.hour, parts.minute, parts.second) = (Int(m.4), Int(m.5), Int(m.6))
        guard let date = Calendar(identifier: .gregorian).date(from: parts) else { return nil }
        return Int64(date.timeIntervalSince1970) * 1000 + Int64(m.7)!
    }

    @Test func anErrorRecordHasItsTimeItsMessageFirstAndItsStackLast() throws {
        let daemon = try DaemonProcess(files: Self.files)
        let client = try daemon.client()
        let before = Int64((Date().timeIntervalSince1970 * 1000).rounded(.down))
        #expect(throws: RPCError.self) { try client.call("macro.call", ["name": "deep"]) }
        let after = Int64((Date().timeIntervalSince1970 * 1000).rounded(.up))
        let record = try #require(try client.call("log.recent", ["limit": 1]).arrayValue?.first)
        #expect(Array(record.objectValue?.keys ?? []) == ["time", "level", "message", "metadata"])
        let text = try #require(record["time"].stringValue)
        let time = try #require(Self.milliseconds(text))
        #expect(time >= before && time <= after)
        #expect(record["level"] == "error")
        #expect(record["message"] == "TypeError: bad 1")
        let file = daemon.macros + "/deep.js"
        let stack = "inner@\(file):2:41\ndeep@\(file):3:3"
        #expect(Array(record["metadata"].objectValue?.keys ?? []) == ["macro", "code", "error.name", "file", "line", "column", "stack"])
        #expect(
            record["metadata"] == [
                "macro": "deep", "code": "threw", "error.name": "TypeError", "file": .string(file), "line": "2", "column": "41",
                "stack": .string(stack),
            ])
        // On stderr: message first, then the metadata, the stack's lines after it, indented.
        let lines = daemon.log.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let start = try #require(lines.firstIndex { $0.contains(" error macrod: TypeError: bad 1") })
        #expect(lines[start].hasSuffix(": TypeError: bad 1 macro=deep code=threw error.name=TypeError file=\(file) line=2 column=41"))
        #expect(Self.milliseconds(String(lines[start].prefix(24))) != nil)
        #expect(Array(lines[(start + 1)...(start + 3)]) == ["    stack:", "      inner@\(file):2:41", "      deep@\(file):3:3"])
    }

    @Test func aSuccessfulReloadIsLogged() throws {
        let daemon = try DaemonProcess(files: Self.files.merging(["lib/helpers.js": "function greet() { return 'hi' }"]) { a, _ in a })
        let client = try daemon.client()
        _ = try client.call("subscribe", ["events": ["macros"]])
        try daemon.dir.write("macros/bump.js", "function() { return 2 }")
        #expect(try client.waitFor("macro.loaded") == ["name": "bump", "version": 2])
        try daemon.dir.write("macros/lib/helpers.js", "function greet() { return 'hello' }")
        #expect(try client.waitFor("macro.loaded") == ["name": "lib/helpers", "version": 2])
        _ = try client.call("macro.save", ["name": "fresh", "source": "function() { return 3 }"])
        let messages = (try client.call("log.recent").arrayValue ?? []).compactMap { $0["message"].stringValue }
        #expect(messages.filter { $0.wholeMatch(of: /loaded \S+ v\d+/) != nil } == ["loaded bump v2", "loaded lib/helpers v2", "loaded fresh v1"])
        #expect(daemon.log.contains(" info macrod: loaded bump v2\n"))
        // Start-up logs one summary, not a line per file.
        #expect(daemon.log.contains(" info macrod: loaded 3 macro(s) from \(daemon.macros), 0 broken\n"))
        #expect(!daemon.log.contains("loaded talk v1"))
    }

    @Test func logRecentKeepsTheLast200() throws {
        let daemon = try DaemonProcess(files: Self.files)
        let client = try daemon.client()
        for n in 1...210 { _ = try client.call("macro.call", ["name": "talk", "args": [.number(Double(n))]]) }
        let all = try #require(try client.call("log.recent").arrayValue)
        #expect(all.count == 200)
        #expect(all.last?["message"] == "line 210")
        #expect(all.first?["message"] == "line 11")
        #expect(try client.call("log.recent", ["limit": 3]).arrayValue?.compactMap { $0["message"].stringValue } == ["line 208", "line 209", "line 210"])
        #expect(try client.call("log.recent", ["limit": 1000]).arrayValue?.count == 200)
        for bad: MacroValue in [-1, 2.5, "3"] {
            let error = try #require(throws: RPCError.self) { try client.call("log.recent", ["limit": bad]) }
            #expect(error.message == "Invalid params: limit must be a whole number >= 0")
        }
    }
}
