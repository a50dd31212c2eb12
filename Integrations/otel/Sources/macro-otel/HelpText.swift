/// The text `macro-otel --help` shows after the overview (lines under 80 columns: the help
/// wraps longer ones).
enum HelpText {
    static let discussion = """
        macro-otel connects to macrod's socket, subscribes to its run records \
        (run.recorded) and sends one span per run of a macro to an OpenTelemetry \
        collector with OTLP over HTTP. It runs beside macrod, which exports nothing \
        itself.

        With a collector (any OTLP/HTTP receiver: the OpenTelemetry Collector,
        Jaeger, Grafana Tempo) listening on its HTTP port, 4318:
          docker run -p 4318:4318 otel/opentelemetry-collector
          export OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4318
          macro-otel --state ~/.local/state/macro-otel.json &
          macro run bump outer 2.5        # a span "macro bump" arrives

        Each span is named "macro NAME" (kind internal) and runs from the run's
        start to its end as macrod recorded them (started + timings.totalMs):
          attributes  macro.name, .version, .origin, .run.id, .call.id,
                      .arguments (JSON), .result (JSON) or .error.code,
                      .error.name, .error.message, .error.file, .error.line,
                      .error.column; .total_ms, .javascript_ms, .changes,
                      .store_changes, .console.lines, .turns
          events      "console" per console line (console.level,
                      console.message), at the run's start; "turn" per turn
                      (turn.at_ms, turn.ms), at its time; "exception" for a
                      failed run (exception.type, .message, .stacktrace)
          status      error for a failed run, with its message
        Texts are cut at --max-attribute-bytes, events at --max-events of each \
        kind (the rest are counted in macro.console.dropped, macro.turns.dropped).

        On start and after each reconnect it catches up with run.list: every run \
        kept after the last one exported (across its own restarts too, with \
        --state), so a macrod that restarts or a connection that breaks loses \
        nothing and exports nothing twice. While macrod is down it retries, \
        waiting up to --retry-max-seconds. SIGINT or SIGTERM stops it after it \
        flushed the spans it has.

        The exporter is swift-otel's, set by the standard variables:
          OTEL_EXPORTER_OTLP_ENDPOINT         http://localhost:4318 (+ /v1/traces)
          OTEL_EXPORTER_OTLP_TRACES_ENDPOINT  the whole URL instead
          OTEL_EXPORTER_OTLP_PROTOCOL         http/protobuf (default), http/json
          OTEL_SERVICE_NAME                   macrod (default)
          OTEL_RESOURCE_ATTRIBUTES            e.g. deployment.environment=home
          OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT, _COMPRESSION, OTEL_BSP_*
        gRPC (port 4317) is not built in: use the collector's HTTP port.

        Spans the collector does not take are dropped after swift-otel's \
        retries (logged); macro-otel keeps reading. More: docs/observability.md, \
        "OpenTelemetry spans".
        """
}
