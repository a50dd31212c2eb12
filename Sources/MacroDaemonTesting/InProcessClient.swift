import MacroBase
import MacroDaemon
import MacroRPC
import NIOCore
import NIOEmbedded

/// One client of an ``InProcessService``: bytes in as if read from the socket, the lines the
/// pipeline writes out, in order.
package final class InProcessClient {
    /// The channel the pipeline runs on.
    package let channel: NIOAsyncTestingChannel
    private var received: [UInt8] = []

    /// The longest a read waits for a line before it fails: a test never hangs, and a loaded
    /// machine (a whole suite in parallel on two cores) is not a failure.
    package var timeout: Duration = .seconds(120)

    init(pipeline: ClientPipeline, adopted: Bool) async throws {
        let channel = NIOAsyncTestingChannel()
        self.channel = channel
        try await channel.eventLoop.submit {
            if adopted { try pipeline.installAdopted(on: channel) } else { try pipeline.install(on: channel) }
        }.get()
        try await channel.connect(to: SocketAddress(unixDomainSocketPath: "/in-process.sock"))
    }

    /// Sends `text` as one read from the socket (it may hold several lines, or part of one).
    package func send(_ text: String) async throws {
        try await channel.writeInbound(channel.allocator.buffer(string: text))
    }

    /// Sends request `method` with `params` under id `id`, as one line.
    package func request(_ method: RPCMethod, _ params: MacroValue? = nil, id: Int) async throws {
        try await send(RPCCodec.request(id: RPCID(json: String(id)), method: method.rawValue, params: params).text + "\n")
    }

    /// The next line written to the client, parsed.
    package func next() async throws -> MacroValue {
        try JSONParser.parse(try await nextLine())
    }

    /// The next line written to the client, without its newline.
    package func nextLine() async throws -> String {
        while true {
            if let end = received.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: received[..<end], as: UTF8.self)
                received.removeSubrange(...end)
                return line
            }
            let buffer = try await nextWrite()
            received += buffer.readableBytesView
        }
    }

    /// Sends one request and returns the reply that carries its id; lines before it (other
    /// replies, notifications) are skipped.
    package func call(_ method: RPCMethod, _ params: MacroValue? = nil, id: Int = 1) async throws -> MacroValue {
        try await request(method, params, id: id)
        while true {
            let message = try await next()
            if message["id"] == .number(Double(id)) { return message }
        }
    }

    /// An adopted connection gets the bytes the previous process read for it (an engine
    /// restart's hand-over).
    package func feedHandedOver(_ text: String) async throws {
        let channel = channel
        let bytes = Array(text.utf8)
        try await channel.eventLoop.submit { ClientPipeline.feed(channel, bytes) }.get()
    }

    /// The client shuts down its writing side (`shutdown(SHUT_WR)`): macrod answers what it sent,
    /// then closes.
    package func halfClose() async throws {
        channel.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
    }

    /// Whether the pipeline closed the connection.
    package var isActive: Bool {
        get async throws {
            let channel = channel
            return try await channel.eventLoop.submit { channel.isActive }.get()
        }
    }

    /// The bytes of the next write to the client, whole: what one trip through the pipeline
    /// carried (call it only when no line of an earlier write is left unread).
    package func nextWriteBytes() async throws -> [UInt8] {
        precondition(received.isEmpty, "an earlier write has lines not read yet")
        return Array(try await nextWrite().readableBytesView)
    }

    private func nextWrite() async throws -> ByteBuffer {
        let channel = channel
        let timeout = timeout
        return try await withThrowingTaskGroup(of: ByteBuffer?.self) { group in
            group.addTask { try await channel.waitForOutboundWrite(as: ByteBuffer.self) }
            group.addTask {
                try await Task.sleep(for: timeout)
                // waitForOutboundWrite ignores cancellation: closing the channel fails it.
                try? await channel.close()
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let buffer = first else {
                throw InProcessTimeout(waited: timeout)
            }
            return buffer
        }
    }
}

/// Nothing was written to the client within ``InProcessClient/timeout``.
package struct InProcessTimeout: Error, CustomStringConvertible {
    /// How long the read waited.
    package let waited: Duration
    package var description: String { "nothing was written to the client within \(waited)" }
}
