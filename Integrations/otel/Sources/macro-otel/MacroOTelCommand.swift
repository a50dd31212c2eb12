import ArgumentParser
import Foundation
import Logging
import MacroOTel
import MacroRPC
import OTel
import ServiceLifecycle

/// `macro-otel`: exports each run macrod records as an OpenTelemetry span (OTLP over HTTP).
@main
struct MacroOTelCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "macro-otel",
        abstract: "Export macrod's run records as OpenTelemetry spans (OTLP/HTTP, swift-otel).",
        discussion: HelpText.discussion
    )

    @Option(help: "macrod's socket. Default: $MACROENGINE_SOCKET, else $XDG_RUNTIME_DIR/macroengine/macrod.sock, else /tmp/macroengine-$UID/macrod.sock.")
    var socket: String?

    @Option(help: "A file keeping the id of the last run exported, so a restarted macro-otel exports only newer runs. Default: none (at start every run macrod keeps is exported).")
    var state: String?

    @Flag(help: "Without a state file, start with the runs recorded from now on instead of every run macrod keeps.")
    var skipExisting = false

    @Option(help: "Seconds without a notification after which macro-otel asks macrod for runs it was not told about (the engine restart's record of the run it stopped).")
    var pollSeconds: Double = 30

    @Option(help: "The most bytes of one attribute or event text (arguments, result, message, stack, console line); longer text is cut with …[cut: N bytes].")
    var maxAttributeBytes = 4096

    @Option(help: "The most console events and the most turn events per span; the rest are counted in macro.console.dropped / macro.turns.dropped.")
    var maxEvents = 100

    @Option(help: "The longest wait, in seconds, between attempts to reach macrod (the waits double from 0.25 s).")
    var retryMaxSeconds: Double = 10

    @Option(help: "trace, debug, info, notice, warning, error or critical.")
    var logLevel = "info"

    func validate() throws {
        guard pollSeconds >= 0.1, pollSeconds <= 86_400 else { throw ValidationError("--poll-seconds must be from 0.1 to 86400") }
        guard maxAttributeBytes >= 64 else { throw ValidationError("--max-attribute-bytes must be at least 64") }
        guard maxEvents >= 0 else { throw ValidationError("--max-events must be 0 or more") }
        guard retryMaxSeconds >= 0.25, retryMaxSeconds <= 3600 else { throw ValidationError("--retry-max-seconds must be from 0.25 to 3600") }
        guard Logger.Level(rawValue: logLevel) != nil else { throw ValidationError("--log-level must be trace, debug, info, notice, warning, error or critical") }
    }

    func run() async throws {
        var logger = Logger(label: "macro-otel", factory: { StreamLogHandler.standardError(label: $0) })
        logger.logLevel = Logger.Level(rawValue: logLevel) ?? .info
        let environment = ProcessInfo.processInfo.environment
        let setup = try ExporterSetup(environment: environment, logger: logger)
        let (tracer, tracing) = try setup.makeTracingBackend()
        let socketPath = SocketPath.resolve(socket, environment: environment)
        let exporter = RunExportService(
            tracer: tracer,
            settings: .init(
                feed: .init(socket: socketPath, pollSeconds: pollSeconds),
                bounds: SpanBounds(attributeBytes: maxAttributeBytes, consoleEvents: maxEvents, turnEvents: maxEvents),
                backoff: Backoff(maximum: .milliseconds(Int64(retryMaxSeconds * 1000))),
                pacer: setup.pacer,
                stateFile: state.map(StateFile.init(path:)),
                skipExisting: skipExisting
            ),
            logger: logger
        )
        logger.info("exporting the runs of macrod at \(socketPath) to \(setup.destination)")
        // Shut down in reverse order: the exporter stops reading first, then the tracer's
        // services flush what it handed them.
        var group = ServiceGroupConfiguration(
            services: [
                .init(service: tracing, successTerminationBehavior: .gracefullyShutdownGroup, failureTerminationBehavior: .gracefullyShutdownGroup),
                .init(service: exporter, successTerminationBehavior: .gracefullyShutdownGroup, failureTerminationBehavior: .gracefullyShutdownGroup),
            ],
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger
        )
        group.maximumGracefulShutdownDuration = Duration.seconds(20)
        try await ServiceGroup(configuration: group).run()
    }
}
