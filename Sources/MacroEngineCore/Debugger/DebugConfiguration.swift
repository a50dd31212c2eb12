import Synchronization

/// What the session's hooks read when its version changes: the breakpoints (by site), the
/// exception filters, and the latest pause request. Written from any thread (a client's
/// request), read by the session's thread through the agent's `poll` and `config`.
final class DebugConfiguration: Sendable {
    /// One breakpoint, bound to a site.
    struct Breakpoint: Sendable {
        var id: Int
        var site: Int
        var condition: String?
        var hitCondition: String?
        var logMessage: String?
        /// A function breakpoint's (on the function's first statement): its stop's reason is
        /// `function breakpoint` when no line breakpoint of the same statement stops too.
        var function = false
    }

    private struct State {
        var breakpoints: [String: [Breakpoint]] = [:]
        var catchAll = false
        var catchUncaught = false
        /// A replay of a failed run: uncaught exceptions always stop it (at the throw), whatever
        /// the client sets.
        var alwaysUncaught = false
        var pauseSerial = 0
        var stopOnEntry = false
        var nextID = 1
    }

    private let state = Mutex(State())
    /// Bumped on every change; the hooks compare it with the last one they read.
    let version = Atomic<Int>(0)

    /// Replaces the breakpoints of `file`; returns them with their ids.
    func setBreakpoints(file: String, _ make: (inout Int) -> [Breakpoint]) -> [Breakpoint] {
        defer { version.add(1, ordering: .sequentiallyConsistent) }
        return state.withLock { state in
            let list = make(&state.nextID)
            state.breakpoints[file] = list
            return list
        }
    }

    func setExceptions(all: Bool, uncaught: Bool) {
        state.withLock {
            $0.catchAll = all; $0.catchUncaught = uncaught || $0.alwaysUncaught
        }
        version.add(1, ordering: .sequentiallyConsistent)
    }

    /// Uncaught exceptions stop the session from now on, whatever the client sets later.
    func setStopsAtUncaught() {
        state.withLock {
            $0.alwaysUncaught = true; $0.catchUncaught = true
        }
        version.add(1, ordering: .sequentiallyConsistent)
    }

    func requestPause() {
        state.withLock { $0.pauseSerial += 1 }
        version.add(1, ordering: .sequentiallyConsistent)
    }

    func setStopOnEntry(_ value: Bool) {
        state.withLock { $0.stopOnEntry = value }
        version.add(1, ordering: .sequentiallyConsistent)
    }

    /// The configuration as the agent reads it. `stopOnEntry` is handed over once.
    func json() -> String {
        let value: MacroValue = state.withLock { state in
            let list = state.breakpoints.values.flatMap { $0 }.map { b -> MacroValue in
                var entry: MacroValue = ["id": .number(Double(b.id)), "site": .number(Double(b.site))]
                if let c = b.condition, !c.isEmpty { entry = entry.setting("condition", .string(c)) }
                if let h = b.hitCondition, !h.isEmpty { entry = entry.setting("hitCondition", .string(h)) }
                if let l = b.logMessage { entry = entry.setting("logMessage", .string(l)) }
                if b.function { entry = entry.setting("fn", true) }
                return entry
            }
            let entry = state.stopOnEntry
            state.stopOnEntry = false
            return [
                "breakpoints": .array(list),
                "exceptions": ["all": .bool(state.catchAll), "uncaught": .bool(state.catchUncaught)],
                "pause": .number(Double(state.pauseSerial)),
                "entry": .bool(entry),
            ]
        }
        return value.jsonText(pretty: false)
    }
}

extension MacroValue {
    /// This object with `key` set to `value`.
    package func setting(_ key: String, _ value: MacroValue) -> MacroValue {
        guard var object = objectValue else { return self }
        object[key] = value
        return .object(object)
    }
}
