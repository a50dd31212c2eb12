import Foundation
import MacroEngineCore
import MacroRPC

#if canImport(Glibc)
import Glibc
#endif

/// A real `macrod` on a temporary socket, macros directory and state file.
public final class DaemonProcess: @unchecked Sendable {
    // @unchecked: used from one test at a time; the Process is only touched by that test.
    /// The temporary directory holding everything.
    public let dir: TemporaryDirectory
    /// The socket path.
    public let socket: String
    /// The macros directory.
    public var macros: String { dir.url("macros") }
    /// The state file.
    public var state: String { dir.url("state.json") }
    /// Where the daemon's stderr goes.
    public var logPath: String { dir.url("macrod.log") }
    private let process = ChildProcess()

    /// Writes `files` into the macros directory and `config` (YAML, optional), starts macrod and
    /// waits until its socket answers (10 s at most). `environment` adds to or overrides the
    /// test's; `umask`: the file mode mask macrod starts with (default: the test process's).
    public init(
        files: [String: String] = [:], config: String? = nil, extraArguments: [String] = [],
        environment: [String: String] = [:], dir: TemporaryDirectory = TemporaryDirectory(prefix: "macrod"),
        umask: mode_t? = nil
    ) throws {
        self.dir = dir
        socket = dir.url("macrod.sock")
        try FileManager.default.createDirectory(atPath: dir.url("macros"), withIntermediateDirectories: true)
        for (name, source) in files { try dir.write("macros/\(name)", source) }
        var arguments = ["--socket", socket, "--macros", macros, "--state", state] + extraArguments
        if let config { arguments += ["--config", try dir.write("config.yaml", config)] }
        let macrod = "\(BinaryRunner.binDirectory)/macrod"
        if let umask {
            // The shell sets the mask, then becomes macrod (same pid).
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", "umask \(String(umask, radix: 8)) && exec \"$0\" \"$@\"", macrod] + arguments
        } else {
            process.executableURL = URL(fileURLWithPath: macrod)
            process.arguments = arguments
        }
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        process.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
        process.standardInput = FileHandle(forReadingAtPath: "/dev/null")
        var env = ProcessInfo.processInfo.environment
        env["MACROENGINE_CONFIG"] = nil
        // SwiftNIO crashes, instead of printing an error, on a task scheduled on a loop that shut down.
        env["SWIFTNIO_STRICT"] = "1"
        env["XDG_CONFIG_HOME"] = dir.url("xdg-config")
        for (key, value) in environment { env[key] = value }
        process.environment = env
        try process.run()
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if (try? RPCClient(path: socket)) != nil { return }
            if process.poll()?.status != nil { break }
            usleep(20_000)
        }
        throw DaemonStartError(log: (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "")
    }

    /// Why the daemon did not come up, with its log.
    public struct DaemonStartError: Error, CustomStringConvertible {
        /// The daemon's stderr.
        public var log: String
        /// For failure messages.
        public var description: String { "macrod did not start:\n\(log)" }
    }

    deinit {
        if process.poll()?.status == nil {
            kill(process.processIdentifier, SIGKILL)
            _ = process.wait().status
        }
    }

    /// A new connection.
    public func client() throws -> RPCClient { try RPCClient(path: socket) }

    /// The daemon's process id.
    public var pid: Int32 { process.processIdentifier }
    /// True while it runs.
    public var isRunning: Bool { process.poll()?.status == nil }

    /// Sends `signal` and, for SIGTERM/SIGINT, waits for the exit; returns the exit status.
    @discardableResult
    public func stop(signal: Int32 = SIGTERM) -> Int32 {
        if signal != 0 { kill(process.processIdentifier, signal) }
        return process.wait().status
    }

    /// Sends a signal without waiting.
    public func signal(_ signal: Int32) { kill(process.processIdentifier, signal) }

    /// A size from `/proc/PID/status` in KiB: `VmRSS` (resident now) or `VmHWM` (peak resident).
    public func memoryKiB(_ field: String) throws -> Int {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix(field + ":") }),
            let kib = Int(line.split(separator: " ", omittingEmptySubsequences: true)[1])
        else {
            throw DaemonStartError(log: "no \(field) in /proc/\(pid)/status")
        }
        return kib
    }

    /// The daemon's log so far.
    public var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }
}

extension RPCClient {
    /// Waits for the next notification named `method` (skipping others), failing after `seconds`.
    public func waitFor(_ method: String, seconds: Double = 10) throws -> MacroValue {
        let deadline = Date().addingTimeInterval(seconds)
        setReceiveTimeout(seconds: seconds)
        defer { setReceiveTimeout(seconds: 0) }
        while Date() < deadline {
            guard let note = try nextNotification() else { break }
            if note["method"] == .string(method) { return note["params"] }
        }
        throw RPCError(code: -1, message: "no \(method) notification within \(seconds) s")
    }
}

extension RPCClient {
    /// The calls `macro.running` lists, polled (every 2 ms, `seconds` at most) until there is
    /// one: a test that must act while a call runs (a signal, a Ctrl-C) waits for this first.
    public func runningCalls(waitingUpTo seconds: Double = 10) throws -> [MacroValue] {
        let deadline = Date().addingTimeInterval(seconds)
        var running: [MacroValue] = []
        while running.isEmpty, Date() < deadline {
            running = try call("macro.running").arrayValue ?? []
            if running.isEmpty { usleep(2_000) }
        }
        return running
    }
}
