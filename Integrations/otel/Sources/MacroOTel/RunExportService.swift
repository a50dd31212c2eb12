import Logging
import ServiceLifecycle
import Tracing

/// The service that exports macrod's runs: a ``RunFeed`` per connection, each record a span on
/// `tracer` (``RunSpan``), reconnecting with a ``Backoff`` when macrod is down or restarts, and
/// catching up from the ``ExportMark`` each time so no run is lost or exported twice. It
/// returns at graceful shutdown (SIGTERM, SIGINT), after saving the mark (`--state`); the
/// tracer's own service, after it in the group, then flushes the spans.
public struct RunExportService<ExportTracer: Tracer>: Service {
    /// What the service does besides the feed's settings.
    public struct Settings: Sendable {
        /// The feed's settings (the socket, the poll, the replies' time).
        public var feed: RunFeed.Settings
        /// What a span carries.
        public var bounds: SpanBounds
        /// The waits between attempts to reach macrod.
        public var backoff: Backoff
        /// Spans per window (the batch processor's batch size and schedule delay).
        public var pacer: Pacer
        /// Where the mark is kept across restarts; nil: in memory only.
        public var stateFile: StateFile?
        /// Start from the newest kept run instead of exporting the kept ones (when no state file
        /// says where the last export stopped).
        public var skipExisting: Bool

        /// Settings for `feed`; the rest as `macro-otel`'s defaults.
        public init(
            feed: RunFeed.Settings, bounds: SpanBounds = SpanBounds(), backoff: Backoff = Backoff(), pacer: Pacer = Pacer(batch: 512, window: .seconds(1)),
            stateFile: StateFile? = nil, skipExisting: Bool = false
        ) {
            self.feed = feed
            self.bounds = bounds
            self.backoff = backoff
            self.pacer = pacer
            self.stateFile = stateFile
            self.skipExisting = skipExisting
        }
    }

    /// Where the spans go.
    public let tracer: ExportTracer
    /// The settings.
    public let settings: Settings
    /// Where the service logs.
    public let logger: Logger

    /// A service exporting to `tracer`.
    public init(tracer: ExportTracer, settings: Settings, logger: Logger) {
        self.tracer = tracer
        self.settings = settings
        self.logger = logger
    }

    /// Runs until graceful shutdown; throws only when the state file cannot be used.
    public func run() async throws {
        var state = ExportState(stateFile: settings.stateFile)
        let loaded = try settings.stateFile?.load()
        if let loaded {
            state.mark = loaded
            logger.info("state file \(settings.stateFile!.path): the last run exported is \(loaded.id)")
        }
        var skipExisting = settings.skipExisting && loaded == nil
        var backoff = settings.backoff
        var pacer = settings.pacer
        let writer = RunSpan(bounds: settings.bounds)
        let feed = RunFeed(settings: settings.feed, logger: logger)
        var lastFailure: String?
        while !Task.isShuttingDownGracefully, !Task.isCancelled {
            let (events, control) = feed.start(from: state.mark, skipExisting: skipExisting)
            var connected = false
            do {
                try await withGracefulShutdownHandler {
                    for try await event in events {
                        defer { control.consumed() }
                        switch event {
                        case .connected:
                            connected = true
                            skipExisting = false
                            backoff.reset()
                            lastFailure = nil
                            logger.info("connected to macrod at \(settings.feed.socket), subscribed to runs")
                        case .run(let run):
                            await pacer.admit()
                            writer.emit(run, to: tracer)
                            state.exported(run)
                        case .skip(let mark), .reset(let mark):
                            state.moved(to: mark)
                        case .caughtUp(let count):
                            if count > 0 { logger.info("caught up: \(count) run(s) exported, the last is run \(state.mark.id)") }
                        }
                        try state.saveIfDue()
                    }
                } onGracefulShutdown: {
                    control.stop()
                }
            } catch let error as ExportError where error.code != .stateFile {
                control.stop()
                // The same failure again (macrod still down) is logged at debug level only.
                let text = error.description
                if connected {
                    logger.warning("lost macrod: \(text); reconnecting")
                } else if text != lastFailure {
                    logger.error("cannot export from macrod: \(text); retrying")
                } else {
                    logger.debug("still: \(text)")
                }
                lastFailure = text
            } catch {
                control.stop()
                try state.save()
                throw error
            }
            if Task.isShuttingDownGracefully { break }
            let delay = backoff.delay()
            logger.debug("next attempt in \(delay)")
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: delay) }
        }
        try state.save()
        logger.info("stopped: \(state.exportedCount) run(s) exported, the last is run \(state.mark.id)")
    }
}
