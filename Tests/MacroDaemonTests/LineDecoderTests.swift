import MacroBase
import MacroRPC
import NIOCore
import NIOEmbedded
import Testing

@testable import MacroDaemon

/// The socket's input and output path in-process: the line decoder hands the connection handler
/// slices of the read buffer, the codec parses them in place, and replies are encoded straight
/// into the buffer that is written. Exact bytes, no daemon.
@Suite("Line decoder and the in-place codec")
struct LineDecoderTests {
    /// What the decoder fires for `reads` (one channel read each; `end`: then the input ends),
    /// as strings (`nil`: `.tooLong`), and what its `PendingInput` holds after each read.
    func decode(_ reads: [String], maximumLength: Int = 1024, end: Bool = false) throws -> (events: [String?], pending: [String]) {
        let pending = PendingInput()
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(LineDecoder(maximumLength: maximumLength, pending: pending)))
        var events: [String?] = []
        var held: [String] = []
        func drain() throws {
            while let event = try channel.readInbound(as: LineEvent.self) {
                switch event {
                case .line(let line): events.append(String(buffer: line))
                case .tooLong: events.append(nil)
                }
            }
        }
        for read in reads {
            try channel.writeInbound(channel.allocator.buffer(string: read))
            try drain()
            held.append(String(decoding: pending.current, as: UTF8.self))
        }
        if end {
            _ = try channel.finish()
            try drain()
        } else {
            _ = try? channel.finish(acceptAlreadyClosed: true)
        }
        return (events, held)
    }

    @Test func aLineSplitAcrossTwoReadsIsOneLineAndItsFirstPartIsPendingInBetween() throws {
        let (events, pending) = try decode([#"{"jsonrpc":"2.0","id":1,"#, #""method":"engine.status"}"# + "\nnext"])
        #expect(events == [#"{"jsonrpc":"2.0","id":1,"method":"engine.status"}"#])
        #expect(pending == [#"{"jsonrpc":"2.0","id":1,"#, "next"])
    }

    @Test func oneReadWithManyLinesFiresEachInOrder() throws {
        let (events, pending) = try decode(["a\nbb\n\nccc\n"])
        #expect(events == ["a", "bb", "", "ccc"])
        #expect(pending == [""])
    }

    @Test func crlfEndsALineAndOnlyTheCarriageReturnBeforeTheNewlineGoes() throws {
        #expect(try decode(["abc\r\n", "\r\n", "a\rb\n", "x\r\r\n"]).events == ["abc", "", "a\rb", "x\r"])
        // Split between the \r and the \n.
        #expect(try decode(["abc\r", "\n"]).events == ["abc"])
        // A last line without its newline is passed on as it is, \r and all.
        #expect(try decode(["one\r\nlast\r"], end: true).events == ["one", "last\r"])
    }

    @Test func aLineOfExactlyTheMaximumLengthPassesAndOneByteMoreIsTooLong() throws {
        #expect(try decode(["12345678\n"], maximumLength: 8).events == ["12345678"])
        #expect(try decode(["123456789\n", "after\n"], maximumLength: 8).events == [nil])
        // The \r counts: the limit is on the line as sent.
        #expect(try decode(["1234567\r\n"], maximumLength: 8).events == ["1234567"])
        #expect(try decode(["12345678\r\n"], maximumLength: 8).events == [nil])
        // Unterminated: held at the maximum, refused one byte past it (once), the rest ignored.
        let atMaximum = try decode(["12345678"], maximumLength: 8)
        #expect(atMaximum.events == [] && atMaximum.pending == ["12345678"])
        let over = try decode(["1234", "56789", "more\nlines\n"], maximumLength: 8)
        #expect(over.events == [nil])
        // Nothing is kept for a hand-over once the line is refused (the connection is closing).
        #expect(over.pending == ["1234", "", ""])
    }

    /// The ids of the JSON-RPC spec's "same value" rule that a double or a re-encoded string would change.
    static let trickyIDs = ["1152921504606846977", "1e3", "-0", "1.50", #""\u00e9""#, "-1152921504606846977", "0.1e-2", #""a\"b\\c""#, "null"]

    @Test(arguments: trickyIDs)
    func anIdComesBackByteForByteThroughTheReadBufferAndTheWriteBuffer(_ id: String) throws {
        let line = #"{"jsonrpc":"2.0","id":\#(id),"method":"macro.call","params":{"name":"add","args":[0.5]}}"#
        let (events, _) = try decode([line + "\r\n"])
        let event = try #require(events.first ?? nil)
        var buffer = ByteBufferAllocator().buffer(string: "junk before|" + event)
        buffer.moveReaderIndex(forwardBy: 12)
        guard case .single(.success(let request)) = RPCCodec.parse(buffer) else {
            Issue.record("not one request: \(line)")
            return
        }
        #expect(request.id == RPCID(json: id))
        let reply = RPCCodec.response(id: try #require(request.id), result: ["inner": 3.5, "calls": 12])
        let expected = #"{"jsonrpc":"2.0","id":\#(id),"result":{"inner":3.5,"calls":12}}"#
        #expect(String(buffer: reply.line(allocator: ByteBufferAllocator())) == expected + "\n")
        #expect(reply.text == expected)
    }

    @Test func aBatchReplyIsOneLineOfTheRepliesInOrder() throws {
        let line = #"[{"jsonrpc":"2.0","id":1e3,"method":"a"},{"jsonrpc":"2.0","method":"note"},7,{"jsonrpc":"2.0","id":"\u00e9","method":"b"}]"#
        guard case .batch(let items) = RPCCodec.parse(ByteBufferAllocator().buffer(string: line)) else {
            Issue.record("not a batch")
            return
        }
        let replies: [RPCMessage] = items.compactMap { item in
            switch item {
            case .success(let request): request.id.map { RPCCodec.response(id: $0, result: .string(request.method)) }
            case .failure(let failure): RPCCodec.response(id: failure.id, error: failure.error)
            }
        }
        let batch = RPCMessage(batch: replies)
        let expected =
            #"[{"jsonrpc":"2.0","id":1e3,"result":"a"},"#
            + #"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: expected a JSON object"}},"#
            + #"{"jsonrpc":"2.0","id":"\u00e9","result":"b"}]"#
        #expect(String(buffer: batch.line(allocator: ByteBufferAllocator())) == expected + "\n")
        var frame = ByteBufferAllocator().buffer(capacity: 0)
        batch.encode(into: &frame)
        #expect(String(buffer: frame) == expected)
        #expect(batch.text == expected)
    }

    @Test func notificationsAreEncodedAsBefore() throws {
        let console = RPCCodec.consoleNotification(id: RPCID(json: "1.50"), call: 3, level: "log", message: "a\u{1}\"b\"\n\u{e9}")
        #expect(
            String(buffer: console.line(allocator: ByteBufferAllocator()))
                == #"{"jsonrpc":"2.0","method":"macro.console","params":{"id":1.50,"call":3,"level":"log","message":"a\u0001\"b\"\n\#u{e9}"}}"# + "\n")
        let changed = RPCCodec.notification("progress.changed", ["inner": 0.1, "outer": -0.0, "big": 1e21, "huge": 9.3e18])
        #expect(
            String(buffer: changed.line(allocator: ByteBufferAllocator()))
                == #"{"jsonrpc":"2.0","method":"progress.changed","params":{"inner":0.1,"outer":0,"big":1e+21,"huge":9300000000000000000}}"# + "\n")
        #expect(RPCCodec.notification("x", .undefined).text == #"{"jsonrpc":"2.0","method":"x"}"#)
    }

    @Test func blankLinesInTheBufferAreBlank() {
        for blank in ["", " \t ", "\u{FEFF}", "\u{FEFF} "] {
            #expect(RPCCodec.isBlank(ByteBufferAllocator().buffer(string: blank)))
        }
        #expect(!RPCCodec.isBlank(ByteBufferAllocator().buffer(string: " x")))
    }
}
