import Logging
import MacroOTel
import OTel
import ServiceLifecycle
import Tracing

/// swift-otel's configuration for macro-otel: traces only, service name `macrod`, a batch every
/// second; then the standard OTEL_* variables as swift-otel reads them. Settings this build
/// cannot honour are refused here with a message, where swift-otel would stop the process.
struct ExporterSetup {
    /// The configuration before swift-otel applies the environment.
    var configuration: OTel.Configuration
    /// Where the spans go, in words (for the log).
    var destination: String
    /// Spans per batch-processor tick.
    var pacer: Pacer

    init(environment: [String: String], logger: Logger) throws(ExportError) {
        var configuration = OTel.Configuration.default
        configuration.serviceName = "macrod"
        configuration.logs.enabled = false
        configuration.metrics.enabled = false
        configuration.traces.batchSpanProcessor.scheduleDelay = .seconds(1)
        // swift-otel's own messages (a batch it could not send) through macro-otel's log, from
        // warnings up unless --log-level asks for more; OTEL_LOG_LEVEL overrides it.
        configuration.diagnosticLogger = .custom(logger)
        switch logger.logLevel {
        case .trace: configuration.diagnosticLogLevel = .trace
        case .debug: configuration.diagnosticLogLevel = .debug
        case .error, .critical: configuration.diagnosticLogLevel = .error
        default: configuration.diagnosticLogLevel = .warning
        }

        func value(_ names: String...) -> (name: String, value: String)? {
            for name in names { if let value = environment[name], !value.isEmpty { return (name, value) } }
            return nil
        }
        if let disabled = value("OTEL_SDK_DISABLED"), disabled.value.lowercased() == "true" {
            throw ExportError(.configuration, "OTEL_SDK_DISABLED=true: nothing would be exported; unset it to export spans")
        }
        if let exporter = value("OTEL_TRACES_EXPORTER"), exporter.value.lowercased() != "otlp" {
            throw ExportError(.configuration, "OTEL_TRACES_EXPORTER=\(exporter.value): macro-otel exports with OTLP only (otlp, the default)")
        }
        let proto = value("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")
        switch proto?.value {
        case nil, "http/protobuf", "http/json": break
        case "grpc":
            throw ExportError(
                .configuration,
                "\(proto!.name)=grpc: this macro-otel is built with the OTLP/HTTP exporter only (gRPC would add grpc-swift to its build); use http/protobuf or http/json and the collector's HTTP port (4318)"
            )
        default:
            throw ExportError(.configuration, "\(proto!.name)=\(proto!.value): not an OTLP protocol; use http/protobuf (the default) or http/json")
        }
        let endpoint = value("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
        if let endpoint, !(endpoint.value.hasPrefix("http://") || endpoint.value.hasPrefix("https://")) {
            throw ExportError(.configuration, "\(endpoint.name)=\(endpoint.value): an OTLP/HTTP endpoint is a URL, such as http://localhost:4318")
        }
        let base = endpoint?.value ?? "http://localhost:4318"
        let url = endpoint?.name == "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT" ? base : (base.hasSuffix("/") ? base + "v1/traces" : base + "/v1/traces")
        destination = "\(url) (\(proto?.value ?? "http/protobuf"), service \(value("OTEL_SERVICE_NAME")?.value ?? "macrod"))"

        // The batch processor sends one batch per tick and drops spans past its queue: the
        // exporter hands it at most a batch per tick (Pacer).
        func integer(_ name: String) -> Int? { value(name).flatMap { Int($0.value) }.flatMap { $0 > 0 ? $0 : nil } }
        let batch = min(integer("OTEL_BSP_MAX_EXPORT_BATCH_SIZE") ?? 512, integer("OTEL_BSP_MAX_QUEUE_SIZE") ?? 2048)
        let delay = integer("OTEL_BSP_SCHEDULE_DELAY").map { Duration.milliseconds($0) } ?? .seconds(1)
        pacer = Pacer(batch: batch, window: delay)
        self.configuration = configuration
    }

    /// swift-otel's tracer and the service that runs its batch processor and exporter.
    func makeTracingBackend() throws(ExportError) -> (factory: some Tracer, service: some Service) {
        do {
            return try OTel.makeTracingBackend(configuration: configuration)
        } catch {
            throw ExportError(.configuration, "swift-otel refused the tracing configuration: \(error)")
        }
    }
}
