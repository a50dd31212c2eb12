import Synchronization

/// Why JavaScript is paused (nil: it runs). A small box: the flag is read on every entry.
final class PauseState: Sendable {
    private let flag = Atomic<Bool>(false)
    private let reason = Mutex<String?>(nil)

    /// The reason, nil when JavaScript runs.
    var current: String? { flag.load(ordering: .acquiring) ? reason.locked { $0 } : nil }

    func set(_ text: String?) {
        reason.locked { $0 = text }
        flag.store(text != nil, ordering: .releasing)
    }
}

extension MacroEngine {
    /// Pauses JavaScript: from now on every entry (a call, a file's load, a timer, `evaluate`)
    /// fails at once with `.paused` and `reason`, without running anything. macrod does this when
    /// the engine stalled more often than its restart budget allows in code no file answers for.
    public func pauseJavaScript(reason: String) { paused.set(reason) }

    /// Lets JavaScript run again (the caller reloads what failed meanwhile).
    public func resumeJavaScript() { paused.set(nil) }

    /// Why JavaScript is paused; nil while it runs.
    public var pausedReason: String? { paused.current }

    /// The error an entry fails with while JavaScript is paused.
    func pausedError(_ reason: String, macro: String?) -> MacroError {
        MacroError(code: .paused, message: "JavaScript is paused: \(reason); run `macro resume` (JSON-RPC engine.resume) to run it again", macro: macro)
    }
}
