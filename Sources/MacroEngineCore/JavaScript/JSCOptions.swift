import CJSCStartup

/// JavaScriptCore options the engine depends on, applied before the first VM exists.
///
/// `usePollingTraps`: optimized (DFG/FTL) code checks the watchdog at loop back-edges instead of
/// relying on signal-based traps. Without it, on WebKitGTK 2.50 a runaway loop that has tiered up
/// (after ~5 calls) is never terminated and the time limit silently stops working. The variable
/// is set by a C constructor (`Sources/CJSCStartup`) before `main`, while the process has one
/// thread: `setenv` once other threads exist (NIO's, the engine's) is a data race with any
/// `getenv`. A value the user already set in the environment is kept.
enum JSCOptions {
    /// True when the options are in place (always, unless the constructor did not run).
    static var applied: Bool { macroengine_jsc_options_applied() }
}
