import Foundation
import MacroEngineCore
import MacroRPC
import Synchronization

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
    /// macrod's `NOTIFY_SOCKET` (systemd's notify protocol): `READY=1` once it serves, at its
    /// start and again after each engine restart (a re-exec), and `WATCHDOG=1` heartbeats when
    /// the environment sets `WATCHDOG_USEC`.
    public let notifications: NotifySocket
    /// What macrod sent to ``notifications`` up to its first `READY=1`, that one included.
    public private(set) var startup: [String] = []

    /// Writes `files` into the macros directory and `config` (YAML, optional), starts macrod and
    /// waits for its `READY=1` (10 s at most; it listens then). `environment` adds to or overrides
    /// the test's, except `NOTIFY_SOCKET` (see ``notifications``); `umask`: the file mode mask
    /// macrod starts with (default: the test process's).
    public init(
        files: [String: String] = [:], config: String? = nil, extraArguments: [String] = [],
        environment: [String: String] = [:], dir: TemporaryDirectory = TemporaryDirectory(prefix: "macrod"),
        umask: mode_t? = nil
    ) throws {
        self.dir = dir
        socket = dir.url("macrod.sock")
        try FileManager.default.createDirectory(atPath: dir.url("macros"), withIntermediateDirectories: true)
        for (name, source) in files { try dir.write("macros/\(name)", source) }
        let logPath = dir.url("macrod.log")
        var arguments = ["--socket", socket, "--macros", dir.url("macros"), "--state", dir.url("state.json")] + extraArguments
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
        precondition(environment["NOTIFY_SOCKET"] == nil, "DaemonProcess sets NOTIFY_SOCKET itself: read `notifications`")
        for (key, value) in environment { env[key] = value }
        // In the abstract namespace: no file in the daemon's directory.
        notifications = try NotifySocket(path: "@macroengine-test.\(getpid()).\(Self.instances.add(1, ordering: .relaxed).newValue)")
        env["NOTIFY_SOCKET"] = notifications.path
        process.environment = env
        try process.run()
        let deadline = ContinuousClock.now + .seconds(10)
        while let message = Self.next(notifications, process: process, until: deadline) {
            startup.append(message)
            if message.hasPrefix("READY=1") { return }
        }
        throw DaemonStartError(log: (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "")
    }

    private static let instances = Atomic<Int>(0)

    /// The next datagram on `socket`; nil once the process ended or `deadline` passed first.
    private static func next(_ socket: NotifySocket, process: ChildProcess, until deadline: ContinuousClock.Instant) -> String? {
        while true {
            if let message = socket.receive() { return message }
            guard process.poll() == nil, waitForReadable([socket.fd] + process.exitDescriptors, until: deadline) != nil else { return nil }
        }
    }

    /// Waits for the next `READY=1` (skipping heartbeats): after an engine restart, the new
    /// process serves, its connections adopted. False when macrod ended or `timeout` passed first.
    public func nextReady(timeout: Duration = .seconds(10)) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while let message = Self.next(notifications, process: process, until: deadline) {
            if message.hasPrefix("READY=1") { return true }
        }
        return false
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

    /// Sends `signal` (0: none) and waits for the exit; returns the exit status.
    @discardableResult
    public func stop(signal: Int32 = SIGTERM) -> Int32 {
        if signal != 0 { kill(process.processIdentifier, signal) }
        return process.wait().status
    }

    /// Waits for the exit (`timeout` at most) and returns its status; nil while it still runs.
    public func waitForExit(timeout: Duration) -> Int32? {
        process.wait(timeout: timeout)?.status
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
    /// Waits for the next notification named `method` whose params satisfy `condition`
    /// (skipping others) and returns its params, failing after `seconds`.
    public func waitFor(_ method: String, seconds: Double = 10, where condition: (MacroValue) -> Bool = { _ in true }) throws -> MacroValue {
        let deadline = Date().addingTimeInterval(seconds)
        defer { setReceiveTimeout(seconds: 0) }
        while true {
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { break }
            setReceiveTimeout(seconds: left)
            guard let note = try nextNotification() else { break }
            if note["method"] == .string(method), condition(note["params"]) { return note["params"] }
        }
        throw RPCError(code: -1, message: "no \(method) notification as expected within \(seconds) s")
    }

    /// Waits for a `log` notification (this connection must subscribe to `log`) whose message
    /// starts with `prefix`; returns the record.
    @discardableResult
    public func waitForLog(_ prefix: String, seconds: Double = 10) throws -> MacroValue {
        try waitFor("log", seconds: seconds) { $0["message"].stringValue?.hasPrefix(prefix) == true }
    }
}

extension RPCClient {
    /// The calls `macro.running` lists, asked until there is one (`seconds` at most; ``eventually(timeout:_:)``
    /// says why this is asked, not announced): a test that must act while a call runs (a signal,
    /// a Ctrl-C, a cancel) waits for this first.
    public func runningCalls(waitingUpTo seconds: Double = 10) throws -> [MacroValue] {
        try eventually(timeout: .milliseconds(Int64(seconds * 1000))) {
            let running = try call("macro.running").arrayValue ?? []
            return running.isEmpty ? nil : running
        } ?? []
    }
}
