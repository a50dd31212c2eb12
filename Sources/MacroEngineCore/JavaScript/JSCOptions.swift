import Foundation

/// JavaScriptCore options the engine depends on, applied once before the first VM exists.
enum JSCOptions {
    /// `usePollingTraps`: optimized (DFG/FTL) code checks the watchdog at loop back-edges
    /// instead of relying on signal-based traps. Without it, on WebKitGTK 2.50 a runaway loop
    /// that has tiered up (after ~5 calls) is never terminated and the time limit silently stops
    /// working. A value the user already set in the environment is kept.
    static let applied: Bool = {
        setenv("JSC_usePollingTraps", "true", 0)
        return true
    }()
}
