import MacroEngineCore

/// How a macro call ended, as the statistics and the metrics count it.
package enum CallOutcome: String, CaseIterable, Sendable {
    /// It returned (or its promise resolved).
    case ok
    /// JavaScript threw, or the macro's promise rejected.
    case threw
    /// It ran past its time limit or its call deadline.
    case timeout
    /// `macro.cancel` stopped it (or the engine shut down under it).
    case cancelled
    /// The engine's memory passed `memory_limit_mb` while it ran.
    case memory
    /// Refused without running: the macro is quarantined, or JavaScript is paused.
    case quarantined
    /// Anything else: a result that cannot be converted, a bad argument to a native function.
    case other

    /// The kinds of error, in the order `errors` lists them.
    package static let errorKinds: [CallOutcome] = [.threw, .timeout, .cancelled, .memory, .quarantined, .other]

    /// The outcome of a call that failed with `error`; nil when the call never ran a macro
    /// (no such macro), which is not counted.
    package init?(failure error: any Error) {
        guard let error = error as? MacroError else {
            self = .other
            return
        }
        switch error.code {
        case .noSuchMacro, .invalidName: return nil
        case .threw: self = .threw
        case .timeout: self = .timeout
        case .cancelled: self = .cancelled
        case .memoryLimit: self = .memory
        case .quarantined, .paused: self = .quarantined
        default: self = .other
        }
    }
}
