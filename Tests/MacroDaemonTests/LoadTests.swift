import Foundation
import MacroEngineCore
import MacroRPC
import MacroTestSupport
import Synchronization
import Testing

/// Guarantee 7 (README, Reliability): many clients at once, with subscriptions, progress.set
/// and live edits mixed in. Every request gets exactly one reply with its id and the right
/// result, subscribers see every published change once and in order, and peak memory is bounded.
@Suite("macrod under load")
struct LoadTests {
    static let clients = 50
    static let requestsPerClient = 2_000
    static let window = 4
    static let subscribers = 5

    @Test func fiftyClientsTwoThousandRequestsEachNothingLostNothingReordered() throws {
        let daemon = try DaemonProcess(
            files: [
                "count.js": "function (n) { progress.inner = (progress.inner + 1) % 10; return n; }",
                "edit.js": "function () { return 0; }",
            ], config: "queue_limit: 100000\n")
        let failures = Mutex<[String]>([])
        let seqs = Mutex<[[Int]]>([])
        let answered = Atomic<Int>(0)
        let group = DispatchGroup()
        for client in 0..<Self.clients {
            group.enter()
            let thread = Thread {
                defer { group.leave() }
                do {
                    let connection = try daemon.client()
                    var seen: [Int] = []
                    if client < Self.subscribers { _ = try connection.call("subscribe", ["events": ["progress"]]) }
                    var next = 0
                    var edits = 0
                    while next < Self.requestsPerClient {
                        // A window of pipelined requests, then their replies.
                        var expected: [Int: MacroValue] = [:]
                        for _ in 0..<Self.window where next < Self.requestsPerClient {
                            let id = client * 1_000_000 + next
                            let line: String
                            if client == Self.clients - 1, next % 100 == 0 {
                                edits += 1
                                try connection.send(
                                    raw: #"{"jsonrpc":"2.0","id":\#(id),"method":"macro.save","params":{"name":"edit","source":"function () { return \#(edits); }"}}"#)
                                expected[id] = .undefined
                                next += 1
                                let callID = client * 1_000_000 + next
                                try connection.send(raw: #"{"jsonrpc":"2.0","id":\#(callID),"method":"macro.call","params":{"name":"edit"}}"#)
                                expected[callID] = .number(Double(edits))
                            } else if next % 10 == 5 {
                                line = #"{"jsonrpc":"2.0","id":\#(id),"method":"progress.set","params":{"middle":\#(next % 10)}}"#
                                try connection.send(raw: line)
                                expected[id] = .undefined
                            } else {
                                line = #"{"jsonrpc":"2.0","id":\#(id),"method":"macro.call","params":{"name":"count","args":[\#(id)]}}"#
                                try connection.send(raw: line)
                                expected[id] = .number(Double(id))
                            }
                            next += 1
                        }
                        while !expected.isEmpty {
                            guard let message = try connection.readMessage() else { throw RPCError(code: 0, message: "connection closed") }
                            if message["method"] == "progress.changed" {
                                seen.append(message["params"]["seq"].intValue ?? -1)
                                continue
                            }
                            guard let id = message["id"].intValue, let want = expected.removeValue(forKey: id) else {
                                throw RPCError(code: 0, message: "unexpected reply \(message.jsonText())")
                            }
                            if message["error"] != .undefined { throw RPCError(code: 0, message: "error reply \(message.jsonText())") }
                            if want != .undefined && message["result"] != want {
                                throw RPCError(code: 0, message: "reply \(id): wanted \(want.jsonText()), got \(message.jsonText())")
                            }
                            answered.add(1, ordering: .relaxed)
                        }
                    }
                    if client < Self.subscribers {
                        // Drain what is still on its way, up to the last change.
                        let last = try connection.call("engine.status")["seq"].intValue ?? 0
                        seen += connection.pendingNotifications.compactMap { $0["params"]["seq"].intValue }
                        while seen.last ?? 0 < last {
                            guard let note = try connection.nextNotification() else { break }
                            seen.append(note["params"]["seq"].intValue ?? -1)
                        }
                        seqs.locked { $0.append(seen) }
                    }
                } catch {
                    failures.locked { $0.append("client \(client): \(error)") }
                }
            }
            thread.stackSize = 1 << 20
            thread.start()
        }
        group.wait()
        #expect(failures.locked { $0 } == [])
        #expect(answered.load(ordering: .relaxed) == Self.clients * Self.requestsPerClient)
        let all = seqs.locked { $0 }
        #expect(all.count == Self.subscribers)
        for seen in all {
            // Every published change, once, in order: seq goes up by exactly one each time.
            #expect(!seen.isEmpty)
            let gaps = zip(seen, seen.dropFirst()).filter { $1 != $0 + 1 }
            #expect(gaps.isEmpty, "gaps or reordering: \(gaps.prefix(5))")
        }
        let status = try daemon.client().call("engine.status")
        #expect(status["errors"] == 0)
        let peak = try daemon.memoryKiB("VmHWM") / 1024
        print("load: \(Self.clients) clients x \(Self.requestsPerClient) requests, peak RSS \(peak) MiB, \(status["seq"].intValue ?? 0) published changes")
        // Sanitizer builds (make sanitize) keep freed memory in quarantine and say so here.
        let bound = ProcessInfo.processInfo.environment["MACROENGINE_LOAD_RSS_BOUND_MIB"].flatMap(Int.init) ?? 512
        #expect(peak < bound)
    }
}
