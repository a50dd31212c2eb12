import Logging
import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#endif

/// Client connections on the engine's own loop, as macrod runs them by default
/// (`io_thread: engine`): each the server end of a `socketpair(2)` whose pipeline, with its
/// ``BusyGate``, is read on the engine's loop, while the ``BusyControl`` thread answers control
/// requests (`macro.cancel`, `macro.running`, `progress.get`) during a long JavaScript entry.
/// No listener and no process: the middle layer's default path, in-process.
package final class EngineLoopClients: Sendable {
    private let host: EngineHost
    private let control: BusyControl
    private let pipeline: ClientPipeline

    /// Starts the busy control of `host`'s engine (stopped by ``stop()``).
    package init(host: EngineHost, maxLineBytes: Int = 1 << 20, maxInFlight: Int = 64, logger: Logger) {
        self.host = host
        let engine = host.engine
        control = BusyControl(
            occupancy: engine.occupancy, engine: engine, control: host.router.control, publisher: host.publisher, allowedUIDs: [],
            listenerCookie: { 0 }, logger: logger)
        pipeline = ClientPipeline(
            host: host, allowedUIDs: [], maxLineBytes: maxLineBytes, maxInFlight: maxInFlight, busyControl: control, logger: logger)
        control.start()
    }

    /// A new connection: its server end joins the engine's loop with the socket's pipeline;
    /// returns the client's end (a connected descriptor, close-on-exec, the caller's to close).
    /// The channel registers on the engine's loop: connect while JavaScript does not hold it
    /// (macrod's clients that come during a long entry are the busy control's, from its listener).
    package func connect() async throws -> Int32 {
        var ends: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0 else {
            throw IOError(errnoCode: errno, reason: "socketpair")
        }
        let pipeline = pipeline
        do {
            _ = try await ClientBootstrap(group: host.engine.eventLoop)
                .channelOption(.allowRemoteHalfClosure, value: true)
                .channelInitializer { channel in channel.eventLoop.makeCompletedFuture { try pipeline.install(on: channel) } }
                .withConnectedSocket(ends[0])
                .get()
        } catch {
            close(ends[0])
            close(ends[1])
            throw error
        }
        return ends[1]
    }

    /// Stops the busy control's thread.
    package func stop() { control.stop() }
}
