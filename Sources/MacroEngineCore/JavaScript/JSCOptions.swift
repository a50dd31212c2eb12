import CJSCStartup

/// JavaScriptCore options the engine depends on, applied before the first VM exists.
///
/// `usePollingTraps`: optimized (DFG/FTL) code checks the watchdog at loop back-edges instead of
/// relying on signal-based traps. Without it, on WebKitGTK 2.50 a runaway loop that has tiered up
/// (after ~5 calls) and the time limit silently stops working. The option is set by a C
/// constructor (`Sources/CJSCStartup`, WebKitGTK's `jsc_options_set_boolean`) before `main`,
/// while the process has one thread and no VM. Not `setenv`: once other threads exist that races
/// with `getenv`, and even before `main` it moves `environ`, from which a statically linked Swift
/// runtime finds `argv` (release binaries lost their arguments). A `JSC_usePollingTraps` the user
/// set in the environment is kept.
enum JSCOptions {
    /// True when the options are in place (always, unless the constructor did not run).
    static var applied: Bool { macroengine_jsc_options_applied() }
}
