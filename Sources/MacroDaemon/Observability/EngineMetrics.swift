import CoreMetrics
import Prometheus

/// macrod's Prometheus metrics: swift-metrics types (`Counter`, `Timer`) backed by a
/// swift-prometheus registry of macrod's own (no global `MetricsSystem` bootstrap), rendered in
/// Prometheus' text format for `GET /metrics`. Call outcomes and durations are recorded as calls
/// end (``StatisticsTable``); the gauges are set just before each scrape.
package final class EngineMetrics: Sendable {
    /// The registry `GET /metrics` renders.
    let registry = PrometheusCollectorRegistry()
    private let factory: PrometheusMetricsFactory
    /// `macroengine_js_heap_bytes`.
    let heapBytes: Prometheus.Gauge
    /// `macroengine_connections`.
    let connections: Prometheus.Gauge
    /// `macroengine_queue_depth`.
    let queueDepth: Prometheus.Gauge
    /// `macroengine_engine_restarts_total`.
    let restarts: CoreMetrics.Counter
    /// `macroengine_quarantined_files`: macro and lib files in quarantine (see ``Quarantine``).
    let quarantined: Prometheus.Gauge
    /// `macroengine_javascript_paused`: 1 while JavaScript is paused (the restart budget is spent).
    let javascriptPaused: Prometheus.Gauge
    private let reloadsOK: CoreMetrics.Counter
    private let reloadsFailed: CoreMetrics.Counter

    static var calls: MetricNameDescriptor { descriptor("calls", "total", "Macro calls by macro and outcome (ok, threw, timeout, cancelled, memory, other).") }
    static var duration: MetricNameDescriptor { descriptor("call_duration", "seconds", "Macro call latency, from its start on the engine to its settling.") }
    static var reloads: MetricNameDescriptor {
        descriptor("reloads", "total", "Macro and lib file reloads (a new version after the first) by result: ok, or failed (did not load).")
    }

    /// `macroengine_NAME_UNIT` (no unit: `macroengine_NAME`) with its HELP text.
    static func descriptor(_ name: String, _ unit: String, _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(namespace: "macroengine", metricName: name, unitName: unit, helpText: help)
    }

    /// Buckets for calls from tens of microseconds (a plain call in-process) to the call deadline.
    static let durationBuckets: [Duration] = [
        .microseconds(50), .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1),
        .microseconds(2500), .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50),
        .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .milliseconds(2500),
        .seconds(5), .seconds(10), .seconds(30),
    ]

    /// Metrics on a registry of their own.
    package init() {
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.durationHistogramBuckets[Self.duration.name] = Self.durationBuckets
        self.factory = factory
        heapBytes = registry.makeGauge(
            descriptor: Self.descriptor("js_heap", "bytes", "JavaScriptCore's heap size (live objects and garbage not collected yet), read at the scrape."))
        connections = registry.makeGauge(descriptor: Self.descriptor("connections", "", "Connected clients: socket, WebSocket and HTTP."))
        queueDepth = registry.makeGauge(descriptor: Self.descriptor("queue_depth", "", "Requests waiting for or running on the engine."))
        quarantined = registry.makeGauge(
            descriptor: Self.descriptor(
                "quarantined_files", "", "Macro and lib files in quarantine: their code stalled the engine; they are not run until changed or lifted (macro.unquarantine)."))
        javascriptPaused = registry.makeGauge(
            descriptor: Self.descriptor(
                "javascript_paused", "", "1 while JavaScript is paused: the engine stalled more than its restart budget in code no file answers for (engine.resume runs it again).")
        )
        let restartsName = Self.descriptor("engine_restarts", "total", "Engine restarts after a stall since macrod was started.")
        restarts = CoreMetrics.Counter(label: restartsName.name, dimensions: [], handler: registry.makeCounter(descriptor: restartsName), factory: factory)
        reloadsOK = CoreMetrics.Counter(
            label: Self.reloads.name, dimensions: [("result", "ok")],
            handler: registry.makeCounter(descriptor: Self.reloads, labels: [("result", "ok")]), factory: factory)
        reloadsFailed = CoreMetrics.Counter(
            label: Self.reloads.name, dimensions: [("result", "failed")],
            handler: registry.makeCounter(descriptor: Self.reloads, labels: [("result", "failed")]), factory: factory)
    }

    static var triggerFires: MetricNameDescriptor {
        descriptor("trigger_fires", "total", "Runs started by triggers (and macro.trigger) by macro and trigger kind: every, cron, watch, start, reload, manual.")
    }
    static var triggerDropped: MetricNameDescriptor {
        descriptor("trigger_dropped", "total", "Trigger fires that started no run, by macro: the run mode dropped them, or the macro's triggers were paused.")
    }

    static var auditEvents: MetricNameDescriptor {
        descriptor(
            "audit_events", "total",
            "Changes recorded in the audit log by kind: save, rollback, delete, quarantine, unquarantine, configReload, progressSet, storeEdit.")
    }

    /// Counts an event of the audit log.
    func auditEvent(kind: AuditEvent.Kind) {
        registry.makeCounter(descriptor: Self.auditEvents, labels: [("kind", kind.rawValue)]).increment()
    }

    /// Counts a run `macro`'s trigger of `kind` started.
    func triggerFired(macro: String, kind: String) {
        registry.makeCounter(descriptor: Self.triggerFires, labels: [("macro", macro), ("kind", kind)]).increment()
    }

    /// Counts a fire of `macro`'s triggers that started nothing.
    func triggerDropped(macro: String) {
        registry.makeCounter(descriptor: Self.triggerDropped, labels: [("macro", macro)]).increment()
    }

    /// The counter of `macro`'s calls that ended with `outcome` (made once; the caller keeps it).
    func callCounter(macro: String, outcome: CallOutcome) -> CoreMetrics.Counter {
        let labels = [("macro", macro), ("outcome", outcome.rawValue)]
        return CoreMetrics.Counter(
            label: Self.calls.name, dimensions: labels, handler: registry.makeCounter(descriptor: Self.calls, labels: labels), factory: factory)
    }

    /// The latency histogram of `macro`'s calls (made once; the caller keeps it).
    func callDuration(macro: String) -> CoreMetrics.Timer {
        let labels = [("macro", macro)]
        return CoreMetrics.Timer(
            label: Self.duration.name, dimensions: labels,
            handler: registry.makeDurationHistogram(descriptor: Self.duration, labels: labels, buckets: Self.durationBuckets), factory: factory)
    }

    /// Counts a reload: a new version went live (`ok`) or did not load (`failed`).
    func reloaded(ok: Bool) { (ok ? reloadsOK : reloadsFailed).increment() }

    /// The metrics in Prometheus' text exposition format (version 0.0.4).
    func render() -> [UInt8] { registry.emitToBuffer() }

    /// The `Content-Type` of ``render()``.
    package static let contentType = "text/plain; version=0.0.4; charset=utf-8"
}
