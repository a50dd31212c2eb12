import Foundation
import MacroBase
import MacroDaemonTesting
import MacroEngineCore
import MacroRPC
import MacroTestSupport
import Testing

/// The middle layer (client pipeline, router, lanes, the engine lane's group commit, methods, error
/// mapping) driven in-process through ``InProcessService``: no socket, no process.
@Suite("macrod's service in-process")
struct ServiceInProcessTests {
    /// A service over a temporary macros directory holding `files`.
    private static func service(_ files: [String: String], queueLimit: Int = 1024, timeLimit: Duration = .seconds(5)) throws -> (InProcessService, TemporaryDirectory) {
        let directory = TemporaryDirectory(prefix: "in-process")
        try FileManager.default.createDirectory(atPath: directory.url("macros"), withIntermediateDirectories: true)
        for (name, text) in files { _ = try directory.write("macros/\(name)", text) }
        var config = MacroConfig(macrosDirectory: directory.url("macros"), stateFile: directory.url("state.json"), timeLimit: timeLimit)
        config.memoryLimitMB = 128
        config.callDeadline = max(config.callDeadline, timeLimit)
        return (try InProcessService(config: config, queueLimit: queueLimit), directory)
    }

    @Test func aCallIsAnsweredWithItsResultAndItsId() async throws {
        let (service, _) = try Self.service(["bump.js": "function bump(by) { progress.inner += by; return progress.inner }"])
        let client = try await service.connect()
        let reply = try await client.call(.call, ["name": "bump", "args": [3]], id: 7)
        #expect(reply == ["jsonrpc": "2.0", "id": 7, "result": 3])
        #expect(try await client.call(.progressGet, id: 8)["result"] == ["inner": 3, "middle": 0, "outer": 0])
    }

    @Test func anUnknownMethodIsMethodNotFoundWhateverItsParams() async throws {
        let (service, _) = try Self.service([:])
        let client = try await service.connect()
        try await client.send(#"{"jsonrpc":"2.0","id":1,"method":"macro.fly","params":[1,2]}"# + "\n")
        let reply = try await client.next()
        #expect(reply["error"]["code"] == .number(Double(RPCError.methodNotFound)))
        #expect(reply["error"]["message"] == "Method not found: macro.fly")
        #expect(reply["id"] == 1)
    }

    @Test func theRequestsOfOneReadAreAnsweredInOrderAndANotificationIsNot() async throws {
        let (service, _) = try Self.service(["twice.js": "function twice(x) { return 2 * x }"])
        let client = try await service.connect()
        try await client.send(
            #"{"jsonrpc":"2.0","id":1,"method":"macro.call","params":{"name":"twice","args":[1]}}"# + "\n"
                + #"{"jsonrpc":"2.0","method":"macro.call","params":{"name":"twice","args":[2]}}"# + "\n"
                + #"{"jsonrpc":"2.0","id":3,"method":"macro.call","params":{"name":"twice","args":[3]}}"# + "\n")
        #expect(try await client.next() == ["jsonrpc": "2.0", "id": 1, "result": 2])
        #expect(try await client.next() == ["jsonrpc": "2.0", "id": 3, "result": 6])
    }

    @Test func theRepliesOfSixteenPipelinedCallsAreOneWrite() async throws {
        let (service, _) = try Self.service(["twice.js": "function twice(x) { return 2 * x }"])
        let client = try await service.connect()
        let lines = (1...16).map { #"{"jsonrpc":"2.0","id":\#($0),"method":"macro.call","params":{"name":"twice","args":[\#($0)]}}"# + "\n" }
        try await client.send(lines.joined())
        // One batch, one commit: its replies leave in one buffer, in order (one writev on a socket).
        let written = String(decoding: try await client.nextWriteBytes(), as: UTF8.self)
        let expected = (1...16).map { #"{"jsonrpc":"2.0","id":\#($0),"result":\#(2 * $0)}"# + "\n" }.joined()
        #expect(written == expected)
    }

    @Test func aLineSplitAcrossReadsIsOneRequest() async throws {
        let (service, _) = try Self.service(["twice.js": "function twice(x) { return 2 * x }"])
        let client = try await service.connect()
        try await client.send(#"{"jsonrpc":"2.0","id":1,"method":"macro.ca"#)
        try await client.send(#"ll","params":{"name":"twice","args":[21]}}"# + "\n")
        #expect(try await client.next() == ["jsonrpc": "2.0", "id": 1, "result": 42])
    }

    @Test func aBatchIsAnsweredAsOneArrayWithItsErrorsInPlace() async throws {
        let (service, _) = try Self.service(["twice.js": "function twice(x) { return 2 * x }"])
        let client = try await service.connect()
        try await client.send(
            #"[{"jsonrpc":"2.0","id":1,"method":"macro.call","params":{"name":"twice","args":[4]}},"#
                + #"{"jsonrpc":"2.0","id":2,"method":"nope"},{"jsonrpc":"2.0","method":"progress.get"},5]"# + "\n")
        let replies = try await client.next()
        let items = try #require(replies.arrayValue)
        #expect(items.count == 3)
        #expect(items[0] == ["jsonrpc": "2.0", "id": 1, "result": 8])
        #expect(items[1]["id"] == 2 && items[1]["error"]["code"] == .number(Double(RPCError.methodNotFound)))
        #expect(items[2]["id"] == .null && items[2]["error"]["code"] == .number(Double(RPCError.invalidRequest)))
    }

    @Test func anUnreadableLineIsAParseErrorAndTheConnectionGoesOn() async throws {
        let (service, _) = try Self.service([:])
        let client = try await service.connect()
        try await client.send("{\"jsonrpc\":\n")
        let reply = try await client.next()
        #expect(reply["id"] == .null)
        #expect(reply["error"]["code"] == .number(Double(RPCError.parseError)))
        #expect(try await client.call(.progressGet, id: 2)["result"] == ["inner": 0, "middle": 0, "outer": 0])
    }

    @Test func aMacroThatThrowsIsMappedWithItsFileLineAndColumn() async throws {
        let (service, directory) = try Self.service(["oops.js": "function oops() {\n    null.x;\n}\n"])
        let client = try await service.connect()
        let error = try await client.call(.call, ["name": "oops"])["error"]
        #expect(error["code"] == .number(Double(RPCError.macroThrew)))
        #expect(error["data"]["file"] == .string(directory.url("macros/oops.js")))
        #expect(error["data"]["line"] == 2)
        #expect(error["data"]["column"] == 9)
        #expect(error["data"]["errorName"] == "TypeError")
    }

    @Test func paramsAreCheckedAgainstTheMethodTable() async throws {
        let (service, _) = try Self.service([:])
        let client = try await service.connect()
        let unknown = try await client.call(.source, ["name": "a", "colour": "red"])["error"]
        #expect(unknown["code"] == .number(Double(RPCError.invalidParams)))
        #expect(unknown["message"] == "Invalid params: unknown param 'colour' (macro.source takes name)")
        let positional = try await client.call(.list, [1], id: 2)["error"]
        #expect(positional["message"] == "Invalid params: macro.list takes no params (send none, {} or [])")
    }

    /// queue_limit counts requests admitted and not finished: of one read's two requests with a
    /// limit of 1, the second is refused before the first has run.
    @Test func pastTheQueueLimitARequestIsBusy() async throws {
        let (service, _) = try Self.service(["one.js": "function one() { return 1 }"], queueLimit: 1)
        let client = try await service.connect()
        try await client.send(
            #"{"jsonrpc":"2.0","id":1,"method":"macro.call","params":{"name":"one"}}"# + "\n"
                + #"{"jsonrpc":"2.0","id":2,"method":"macro.call","params":{"name":"one"}}"# + "\n")
        let first = try await client.next(), second = try await client.next()
        #expect(first["error"]["code"] == .number(Double(RPCError.busy)) && first["id"] == 2)
        #expect(second == ["jsonrpc": "2.0", "id": 1, "result": 1])
        #expect(try await client.call(.call, ["name": "one"], id: 3)["result"] == 1)
    }

    /// The engine lane's queue: the reads of two connections made while the engine's loop is
    /// busy are two batches queued behind each other; they run in the order they were read (the
    /// second sees the first's change), and their changes share one journal append (the group
    /// commit), written before either reply (this half fails with the commit not deferred).
    @Test func batchesQueuedBehindEachOtherRunInOrderAndShareOneAppend() async throws {
        let (service, directory) = try Self.service(["bump.js": "function bump(by) { progress.inner += by; return progress.inner }"])
        let first = try await service.connect(), second = try await service.connect()
        let journal = directory.url("state.json.journal")
        #expect(try await first.call(.call, ["name": "bump", "args": [1]], id: 1)["result"] == 1)
        let linesBefore = try String(contentsOfFile: journal, encoding: .utf8).split(separator: "\n").count
        // The engine's loop waits until both reads are queued behind it (a send returns once its
        // read has been handed to the lane).
        let release = DispatchSemaphore(value: 0)
        service.environment.engine.eventLoop.execute { release.wait() }
        do {
            // Released whatever happens: a loop left waiting would hang the suite.
            defer { release.signal() }
            try await first.request(.call, ["name": "bump", "args": [2]], id: 2)
            try await second.request(.call, ["name": "bump", "args": [3]], id: 3)
        }
        #expect(try await first.next() == ["jsonrpc": "2.0", "id": 2, "result": 3])
        #expect(try await second.next() == ["jsonrpc": "2.0", "id": 3, "result": 6])
        let lines = try String(contentsOfFile: journal, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == linesBefore + 1, "\(lines)")
        #expect(lines.last.map { $0.contains(#""inner":6"#) } == true, "\(lines)")
    }

    /// The control lane: `macro.running` and `macro.cancel` are answered while a macro keeps the
    /// engine busy (a loop longer than the watchdog's tick), and the cancel's reply waits for the
    /// stop, which the caller gets as -32001 with reason "cancelled".
    @Test func theControlLaneAnswersWhileTheEngineIsBusy() async throws {
        // Limits far beyond the test's run, even on a loaded machine (the whole suite runs in
        // parallel on two cores): only the cancel stops it.
        let (service, _) = try Self.service(["spin.js": "function spin() {\n    for (;;) {}\n}\n"], timeLimit: .seconds(600))
        let caller = try await service.connect()
        let control = try await service.connect()
        try await caller.request(.call, ["name": "spin"], id: 1)
        var running: [MacroValue] = []
        while running.isEmpty {
            running = try await control.call(.running, id: 2)["result"].arrayValue ?? []
        }
        #expect(running.count == 1 && running[0]["name"] == "spin")
        let call = running[0]["call"]
        #expect(try await control.call(.cancel, ["call": call], id: 3)["result"] == ["call": call, "cancelled": true])
        let stopped = try await caller.next()
        #expect(stopped["id"] == 1)
        #expect(stopped["error"]["code"] == .number(Double(RPCError.timeout)))
        #expect(stopped["error"]["data"]["reason"] == "cancelled")
        #expect(try await control.call(.running, id: 4)["result"] == [])
    }

    /// A client that half-closes after its requests gets every reply, then the connection closes.
    @Test func aHalfClosedClientGetsItsRepliesThenTheConnectionCloses() async throws {
        let (service, _) = try Self.service(["twice.js": "function twice(x) { return 2 * x }"])
        let client = try await service.connect()
        try await client.send(
            #"{"jsonrpc":"2.0","id":1,"method":"macro.call","params":{"name":"twice","args":[5]}}"# + "\n"
                + #"{"jsonrpc":"2.0","id":2,"method":"macro.call","params":{"name":"twice","args":[6]}}"#)
        try await client.halfClose()
        #expect(try await client.next() == ["jsonrpc": "2.0", "id": 1, "result": 10])
        #expect(try await client.next() == ["jsonrpc": "2.0", "id": 2, "result": 12])
        try await client.channel.closeFuture.get()
    }
}

/// An adopted connection (an engine restart's hand-over): what the socket says before the
/// handed-over bytes are fed (NIO reads the rest of the kernel's buffer when it sees the end of
/// input, even with autoRead off) waits until they are, in order.
@Suite("macrod's service in-process: adopted connections")
struct AdoptedConnectionTests {
    private static func service() throws -> (InProcessService, TemporaryDirectory) {
        let directory = TemporaryDirectory(prefix: "in-process")
        _ = try directory.write("macros/twice.js", "function twice(x) { return 2 * x }")
        let config = MacroConfig(macrosDirectory: directory.url("macros"), stateFile: directory.url("state.json"))
        return (try InProcessService(config: config), directory)
    }

    @Test func theTailOfALineAndTheEndOfInputWaitForTheHandedOverStart() async throws {
        let (service, _) = try Self.service()
        let client = try await service.adopt()
        // Read by the new process first: the rest of a line cut by the restart, one more request,
        // and the client's end of input.
        try await client.send(
            #"ll","params":{"name":"twice","args":[21]}}"# + "\n" + #"{"jsonrpc":"2.0","id":2,"method":"macro.call","params":{"name":"twice","args":[1]}}"# + "\n")
        try await client.halfClose()
        // Then the bytes the previous process had read: the line's start.
        try await client.feedHandedOver(#"{"jsonrpc":"2.0","id":1,"method":"macro.ca"#)
        #expect(try await client.next() == ["jsonrpc": "2.0", "id": 1, "result": 42])
        #expect(try await client.next() == ["jsonrpc": "2.0", "id": 2, "result": 2])
        try await client.channel.closeFuture.get()
    }

    @Test func aConnectionWithNothingHandedOverAnswersWhatItReads() async throws {
        let (service, _) = try Self.service()
        let client = try await service.adopt()
        try await client.send(#"{"jsonrpc":"2.0","id":7,"method":"macro.call","params":{"name":"twice","args":[4]}}"# + "\n")
        try await client.feedHandedOver("")
        #expect(try await client.next() == ["jsonrpc": "2.0", "id": 7, "result": 8])
        #expect(try await client.call(.call, ["name": "twice", "args": [5]], id: 8)["result"] == 10)
    }
}
