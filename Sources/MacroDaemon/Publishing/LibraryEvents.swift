import MacroEngineCore
import MacroRPC
import NIOCore

/// The library's changes as `macro.loaded`, `macro.failed` and `macro.removed` notifications,
/// and in the per-macro statistics (loads and failed loads).
enum LibraryEvents {
    /// Forwards every change `library` reports from now on; `loop` is the engine's, where the
    /// statistics live.
    /// `history` keeps each new version and audits the change first.
    static func forward(
        from library: MacroLibrary, to hub: NotificationHub, statistics: NIOLoopBoundBox<StatisticsTable>, history: History? = nil, on loop: any EventLoop
    ) {
        let record = { @Sendable (body: @escaping @Sendable (StatisticsTable) -> Void) in
            if loop.inEventLoop { body(statistics.value) } else { loop.execute { body(statistics.value) } }
        }
        library.triggers.onEvent { [hub] event in
            switch event {
            case .started(let macro, let call, let payload):
                record { table in
                    table.started(call, macro: macro)
                    table.metrics.triggerFired(macro: macro, kind: payload["kind"].stringValue ?? "manual")
                }
                hub.publish(
                    .macros, RPCNotification.triggered.rawValue,
                    ["name": .string(macro), "kind": .string(payload["kind"].stringValue ?? "manual"), "call": .number(Double(call)), "event": payload])
            case .finished(let macro, let call, _, let milliseconds, let result):
                let failure: (any Error)? = if case .failure(let error) = result { error } else { nil }
                record { $0.finished(call, macro: macro, nanoseconds: UInt64(max(0, milliseconds * 1e6)), failure: failure) }
            case .dropped(let macro, _, _):
                record { $0.metrics.triggerDropped(macro: macro) }
            }
        }
        library.onChange { [hub] change in
            history?.libraryChanged(change)
            switch change {
            case .loaded(let name, let version, let dependents):
                record { $0.loaded(name, version: version) }
                var params: OrderedFields = ["name": .string(name), "version": .number(Double(version))]
                if !dependents.isEmpty { params["dependents"] = .array(dependents.map { .string($0) }) }
                hub.publish(.macros, RPCNotification.loaded.rawValue, .object(params))
            case .failed(let name, let error, let dependents):
                record { $0.failed(name) }
                var params: OrderedFields = ["name": .string(name), "file": .string(error.file ?? "")]
                params["line"] = error.line.map { .number(Double($0)) } ?? .null
                params["column"] = error.column.map { .number(Double($0)) } ?? .null
                params["message"] = .string(error.headline)
                if !dependents.isEmpty { params["dependents"] = .array(dependents.map { .string($0) }) }
                hub.publish(.macros, RPCNotification.failed.rawValue, .object(params))
            case .resourceChanged(let name, let version):
                hub.publish(.macros, RPCNotification.loaded.rawValue, ["name": .string(name), "kind": "resource", "version": .number(Double(version))])
            case .removed(let name):
                hub.publish(.macros, RPCNotification.removed.rawValue, ["name": .string(name)])
            }
        }
    }
}
