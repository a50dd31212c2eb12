import Foundation
import Logging
import MacroRPC

/// One connection to macrod, on a thread of its own (``RPCClient`` blocks): connects, subscribes
/// to `runs`, catches up with `run.list` from the mark, then follows `run.recorded`, fetching each
/// record whole with `run.get`. The stream ends when the connection does, with the error that
/// ended it (an ``ExportError``); the exporter then reconnects from its mark.
public struct RunFeed: Sendable {
    /// How the feed talks to macrod.
    public struct Settings: Sendable {
        /// macrod's socket.
        public var socket: String
        /// Seconds without a notification after which the feed catches up anyway (a run recorded
        /// without a notification, as the engine restart's record of the run it stopped is).
        public var pollSeconds: Double
        /// Seconds macrod has to answer one request before the connection is given up.
        public var replySeconds: Double
        /// Records that may wait between the socket and the tracer.
        public var credits: Int

        /// Settings for the socket at `socket`.
        public init(socket: String, pollSeconds: Double = 30, replySeconds: Double = 60, credits: Int = 16) {
            self.socket = socket
            self.pollSeconds = pollSeconds
            self.replySeconds = replySeconds
            self.credits = credits
        }
    }

    /// The settings.
    public var settings: Settings
    /// Where the feed logs (catching up, ids that went back, records skipped).
    public var logger: Logger

    /// A feed with `settings`, logging to `logger`.
    public init(settings: Settings, logger: Logger) {
        self.settings = settings
        self.logger = logger
    }

    /// Starts the connection's thread: the runs after `mark` (all kept runs, or with
    /// `skipExisting` none of them: only those recorded from now on), then each new one.
    public func start(from mark: ExportMark, skipExisting: Bool = false) -> (events: AsyncThrowingStream<FeedEvent, any Error>, control: FeedControl) {
        let (events, continuation) = AsyncThrowingStream.makeStream(of: FeedEvent.self)
        let control = FeedControl(continuation: continuation, credits: settings.credits)
        let settings = settings
        let logger = logger
        let thread = Thread {
            do {
                let client = try FeedSession.connect(to: settings.socket)
                guard control.attach(client) else { return }
                defer { control.detach() }
                var session = FeedSession(client: client, settings: settings, mark: mark, skipExisting: skipExisting, control: control, logger: logger)
                try session.run()
                continuation.finish()
            } catch {
                continuation.finish(throwing: control.isStopping ? nil : error)
            }
        }
        thread.name = "macro-otel feed"
        thread.start()
        return (events, control)
    }
}
