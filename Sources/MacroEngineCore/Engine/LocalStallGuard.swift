import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The stall watch of an in-process engine (`macro` without a daemon): JavaScript that
/// JavaScriptCore cannot interrupt (an endless chain of promise jobs) must not hang the command.
/// - A file that stalls while it loads: the command runs again (same arguments, `exec`) with the
///   file quarantined, so it is reported as broken and everything else goes on.
/// - A call that stalls: the command stops with the timeout exit code (75) and a message; the
///   state file is not written, so the call changes nothing.
public enum LocalStallGuard {
    /// Starts watching `engine`; applies a quarantine inherited from a re-run to `library`.
    public static func install(engine: MacroEngine, library: MacroLibrary, grace: Duration, json: Bool) -> StallWatch {
        let ceiling = engine.configuration.memoryLimit.map { $0 / 2 * 3 }
        let inherited = Quarantine.fromEnvironment()
        library.setQuarantine(inherited)
        return StallWatch(occupancy: engine.occupancy, grace: grace, memoryCeiling: ceiling) { stall in
            if let file = stall.occupancy.loadingFile {
                var list = inherited
                list.add(file, hash: stall.occupancy.loadingHash ?? 0, stuckMilliseconds: stall.stuckMilliseconds)
                setenv(Quarantine.environmentKey, list.environmentValue, 1)
                let arguments = CommandLine.arguments
                var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
                execv("/proc/self/exe", &argv)
                FileHandle.standardError.write(
                    Data("macro: \(file): its code keeps the engine busy while it loads, and re-running without it failed: \(String(cString: strerror(errno)))\n".utf8))
                exit(70)
            }
            let message =
                stall.residentBytes.map {
                    "stopped: the process reached \($0 >> 20) MiB, 1.5 x memory_limit_mb, in JavaScript the watchdog cannot reach (allocating in an endless chain of promise jobs?); nothing was saved"
                }
                ?? "stopped: the macro kept the engine busy for \(stall.stuckMilliseconds) ms, past its time limit plus stall_grace_ms, in a way the engine cannot interrupt (an endless chain of promise jobs, such as `for (;;) await null`?); nothing was saved"
            if json {
                // The CLI's --json failure shape: numeric code (the exit code) and a kind.
                let text = MacroValue.object(["error": ["code": 75, "kind": "timeout", "message": .string(message)]]).jsonText()
                FileHandle.standardOutput.write(Data((text + "\n").utf8))
            }
            FileHandle.standardError.write(Data("macro: error: \(message)\n".utf8))
            exit(75)
        }
    }
}
