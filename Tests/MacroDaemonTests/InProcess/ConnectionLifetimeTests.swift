import Foundation
import MacroBase
import MacroDaemonTesting
import MacroEngineCore
import MacroRPC
import MacroTestSupport
import NIOCore
import Testing

@testable import MacroDaemon

/// What a connection leaves behind once it is gone: nothing. Its handler is the reply receiver
/// of its `Connection` (``ReplyRoute/connection(_:)``), so the two must not keep each other alive.
@Suite("a connection's lifetime in-process")
struct ConnectionLifetimeTests {
    @Test func aClosedConnectionFreesItsHandlerAndItsConnection() async throws {
        let directory = TemporaryDirectory(prefix: "lifetime")
        try FileManager.default.createDirectory(atPath: directory.url("macros"), withIntermediateDirectories: true)
        _ = try directory.write("macros/twice.js", "function twice(x) { return 2 * x }")
        var config = MacroConfig(macrosDirectory: directory.url("macros"), stateFile: directory.url("state.json"))
        config.memoryLimitMB = 128
        let service = try InProcessService(config: config)
        let client = try await service.connect()
        #expect(try await client.call(.call, ["name": "twice", "args": [21]], id: 1)["result"] == 42)

        let channel = client.channel
        let probe = try await channel.eventLoop.submit {
            WeakHandler(try channel.pipeline.syncOperations.handler(type: ConnectionHandler.self))
        }.get()
        #expect(probe.isAlive)
        #expect(service.host.hub.count == 1)
        try await channel.close()
        #expect(service.host.hub.count == 0)
        #expect(!probe.isAlive, "the closed connection's handler is still alive (a reference cycle with its Connection)")
    }
}

/// A weak reference to a connection's handler, read from the test's task.
private final class WeakHandler: @unchecked Sendable {
    // @unchecked: the one stored property is a weak reference, set once on the channel's loop;
    // the Swift runtime loads and clears weak references atomically, and nothing else is read.
    private weak var handler: ConnectionHandler?

    init(_ handler: ConnectionHandler) { self.handler = handler }

    /// Whether the handler still exists.
    var isAlive: Bool { handler != nil }
}
