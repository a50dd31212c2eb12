import CSystemShims
import Foundation
import Logging
import MacroEngineCore
import NIOCore
import Synchronization

/// A debug session's process (`macrod --debug-worker`, ``DebugWorker``), seen from macrod.
///
/// macrod writes the launch and the requests to its standard input and reads its replies and
/// events from its standard output on a thread of this session's. A monitor checks the process
/// every ``tick`` and kills it (SIGKILL, which nothing in JavaScriptCore can delay):
/// - at the memory cap: its resident size past its size at launch plus 1.5 x the session's
///   `memory_limit_mb`, as the live engine's stall watch judges the daemon (`memoryLimit`);
/// - past the call deadline in *running* time (time stopped at a breakpoint does not count) plus
///   a grace for the session's own stop, which the hooks usually make first (`timeout`);
/// - a grace after a terminate it did not obey (`cancelled`);
/// - past ``launchLimit`` (or the call deadline) loading its files (`timeout`).
/// Its memory is its own, so no live call is ever blamed for it, and no thread of it outlives
/// the session.
final class DebugProcess: Sendable {
    /// What the session tells its client: a `debug.*` notification's name and params (without
    /// `session`), the last being `terminated`.
    enum Event: Sendable {
        case launched(Result<MacroValue, DebugError>)
        case notification(String, MacroValue)
    }

    /// How often the monitor looks at the process.
    static let tick: Duration = .milliseconds(50)
    /// How long a terminated session, or one past its deadline, has to end by itself.
    static let grace: TimeAmount = .seconds(1)
    /// How long loading the files may take, at least (the call deadline when it is longer).
    static let launchLimit: Duration = .seconds(10)

    let pid: pid_t
    /// The worker's standard input: one end of a socket pair (a write to a worker that died is
    /// EPIPE with MSG_NOSIGNAL, never a SIGPIPE to macrod), -1 once closed; writes and the close
    /// take turns, so no write reaches a descriptor number the system gave out again.
    private let input: Mutex<Int32>
    private let limits: Limits
    private let logger: Logger
    private let events: @Sendable (Event) -> Void
    private let state = Mutex(State())
    private let nextID = Atomic<Int>(0)
    private let output: Int32
    private let launch: MacroValue

    struct Limits: Sendable {
        var memoryLimit: Int?
        var callDeadline: Duration
    }

    private struct State: Sendable {
        var pending: [Int: @Sendable (Result<MacroValue, DebugError>) -> Void] = [:]
        var launched = false
        var launchFailed = false
        var baseline = 0
        var running: Duration = .zero
        var runningSince: NIODeadline?
        let spawned = NIODeadline.now()
        var stopped = false
        var terminateAsked: NIODeadline?
        var killedFor: MacroError?
        var ended = false
    }

    /// True while the session is stopped at a breakpoint, a step or a pause.
    var isStopped: Bool { state.withLock { $0.stopped } }

    /// Starts the worker `executable` for `options` (nothing is sent before ``start()``);
    /// `events` gets the launch's outcome first, then the session's notifications, from the
    /// session's reader thread.
    init(executable: String, options: DebugSession.Options, logger: Logger, events: @escaping @Sendable (Event) -> Void) throws(DebugError) {
        var toChild: [Int32] = [-1, -1], fromChild: [Int32] = [-1, -1]
        guard Self.socketPair(&toChild) else {
            throw DebugError(.launchFailed, "cannot start a debug session: socketpair: \(String(cString: strerror(errno)))")
        }
        guard Self.socketPair(&fromChild) else {
            close(toChild[0]); close(toChild[1])
            throw DebugError(.launchFailed, "cannot start a debug session: socketpair: \(String(cString: strerror(errno)))")
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, toChild[0], 0)
        posix_spawn_file_actions_adddup2(&actions, fromChild[1], 1)
        // Nothing else of macrod's (its sockets, its journals) reaches the worker.
        _ = macroengine_spawn_closefrom(&actions, 3)
        let arguments = [executable, "--debug-worker"]
        let argv = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, executable, &actions, nil, argv, environ)
        close(toChild[0])
        close(fromChild[1])
        guard spawned == 0 else {
            close(toChild[1]); close(fromChild[0])
            throw DebugError(.launchFailed, "cannot start a debug session: \(executable): \(String(cString: strerror(spawned)))")
        }
        self.pid = pid
        self.input = Mutex(toChild[1])
        self.limits = Limits(memoryLimit: options.memoryLimit, callDeadline: options.callDeadline)
        self.logger = logger
        self.events = events
        self.output = fromChild[0]
        self.launch = options.json
    }

    /// Sends the launch and starts reading and watching the process (call once, after keeping it).
    func start() {
        write(["launch": launch])
        let output = output
        let reader = Thread { [self] in read(output) }
        reader.name = "debug-session-\(pid)"
        reader.start()
        // The monitor's own thread: it must tick whatever the event loops are doing.
        let monitor = Thread { [self] in
            let tick = UInt32(Self.tick.components.attoseconds / 1_000_000_000_000)
            while !state.withLock({ $0.ended }) {
                usleep(tick)
                check()
            }
        }
        monitor.name = "debug-monitor-\(pid)"
        monitor.start()
    }

    /// A connected pair of Unix stream sockets whose ends close on exec, made so atomically: a
    /// descriptor that another thread's spawn (another session's worker) inherited would keep the
    /// worker's output open after the worker died, and its end would never be read. A re-exec of
    /// macrod keeps none of them either.
    private static func socketPair(_ fds: inout [Int32]) -> Bool {
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0 else { return false }
        return true
    }

    /// Sends request `op` with `params` (its fields beside `op`); `reply` gets the worker's answer.
    func send(_ op: String, _ params: MacroValue = [:], reply: @escaping @Sendable (Result<MacroValue, DebugError>) -> Void) {
        let id = nextID.add(1, ordering: .relaxed).newValue
        let accepted = state.withLock { state -> Bool in
            guard !state.ended else { return false }
            state.pending[id] = reply
            if op == "terminate", state.terminateAsked == nil { state.terminateAsked = .now() }
            // A resume: running time counts from now.
            let resumes = op == "run" || (op == "request" && ["continue", "next", "stepIn", "stepOut"].contains(params["request"].stringValue ?? ""))
            if resumes, state.stopped || op == "run" {
                state.stopped = false
                if state.runningSince == nil { state.runningSince = .now() }
            }
            return true
        }
        guard accepted else { return reply(.failure(DebugError(.ended, "the debug session has ended"))) }
        var line: MacroValue = ["id": .number(Double(id)), "op": .string(op)]
        for (key, value) in params.objectValue ?? [:] { line = line.setting(key, value) }
        write(line)
    }

    /// Ends the session: a terminate request, then SIGKILL after ``grace`` if it is still there.
    func terminate() { send("terminate") { _ in } }

    private func write(_ value: MacroValue) {
        let bytes = Array((value.jsonText(pretty: false) + "\n").utf8)
        input.withLock { fd in
            guard fd >= 0 else { return }
            var offset = 0
            while offset < bytes.count {
                let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL)) }
                if n < 0, errno == EINTR { continue }
                guard n > 0 else { return }  // The worker is gone: the reader reports it.
                offset += n
            }
        }
    }

    // MARK: The reader

    private func read(_ fd: Int32) {
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        var terminated: MacroValue?
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { break }
            buffer += chunk[..<n]
            while let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = buffer[..<newline]
                buffer.removeSubrange(...newline)
                if let message = try? JSONParser.parse(line, maximumDepth: 4096), let body = handle(message) { terminated = body }
            }
        }
        close(fd)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0, errno == EINTR {}
        input.withLock { fd in
            close(fd)
            fd = -1
        }
        let (pending, killedFor, launched, launchFailed) = state.withLock { state in
            state.ended = true
            defer { state.pending = [:] }
            return (state.pending, state.killedFor, state.launched, state.launchFailed)
        }
        for reply in pending.values { reply(.failure(DebugError(.ended, "the debug session has ended"))) }
        if launchFailed { return }
        if let body = terminated {
            // Sent once the process is gone: nothing of the session outlives its end.
            return events(.notification("terminated", body))
        }
        let error =
            killedFor
            ?? MacroError(code: .threw, message: "the debug session's process ended (\(Self.describe(status))) before its macro did")
        if !launched { return events(.launched(.failure(DebugError(.launchFailed, error.message)))) }
        logger.warning("debug session (process \(pid)): \(error.message)")
        let outcome = DebugOutcome(result: nil, error: error, values: [], changes: [])
        events(.notification("terminated", outcome.json))
    }

    /// Handles one line of the worker's; returns the `terminated` event's body, which waits for
    /// the process to exit (and is killed after ``grace`` if it does not).
    private func handle(_ message: MacroValue) -> MacroValue? {
        if let id = message["id"].intValue {
            let reply = state.withLock { $0.pending.removeValue(forKey: id) }
            if message["error"] != .undefined {
                let code = DebugError.Code(rawValue: message["error"]["code"].stringValue ?? "") ?? .invalidRequest
                reply?(.failure(DebugError(code, message["error"]["message"].stringValue ?? "the debug session failed")))
            } else {
                reply?(.success(message["result"]))
            }
            return nil
        }
        if message["launched"] != .undefined {
            state.withLock {
                $0.launched = true
                $0.baseline = Self.residentBytes(of: pid)
                $0.runningSince = nil
                $0.running = .zero
            }
            events(.launched(.success(message["launched"].setting("pid", .number(Double(pid))))))
            return nil
        }
        if let failure = message["failed"].stringValue {
            state.withLock {
                $0.launched = true
                $0.launchFailed = true
            }
            events(.launched(.failure(DebugError(.launchFailed, failure))))
            return nil
        }
        guard let name = message["event"].stringValue else { return nil }
        if name == "stopped" {
            state.withLock { state in
                state.stopped = true
                if let since = state.runningSince { state.running += since.durationUntilNow }
                state.runningSince = nil
            }
        }
        if name == "terminated" {
            state.withLock { if $0.terminateAsked == nil { $0.terminateAsked = .now() } }
            return message["body"]
        }
        events(.notification(name, message["body"]))
        return nil
    }

    // MARK: The monitor

    private func check() {
        let resident = Self.residentBytes(of: pid)
        let verdict = state.withLock { state -> MacroError? in
            guard !state.ended, state.killedFor == nil else { return nil }
            let now = NIODeadline.now()
            if let limit = limits.memoryLimit, state.launched, resident > state.baseline + limit / 2 * 3 {
                state.killedFor = MacroError(
                    code: .memoryLimit,
                    message:
                        "stopped: the debug session grew by \((resident - state.baseline) >> 20) MiB, over 1.5 x the \(limit >> 20) MiB limit (memory_limit_mb)")
            } else if let asked = state.terminateAsked, now - asked > Self.grace {
                state.killedFor = MacroError(code: .cancelled, message: "the debug session was terminated")
            } else if !state.launched, state.spawned.durationUntilNow > max(limits.callDeadline, Self.launchLimit) + .seconds(1) {
                state.killedFor = MacroError(
                    code: .timeout, message: "the debug session did not load its files within \(Self.launchLimit) (a lib file's top level that never ends?)")
            } else {
                var running = state.running
                if let since = state.runningSince { running += since.durationUntilNow }
                if running > limits.callDeadline + .nanoseconds(Self.grace.nanoseconds) {
                    state.killedFor = MacroError(
                        code: .timeout,
                        message:
                            "timed out after \(limits.callDeadline.components.seconds * 1000 + limits.callDeadline.components.attoseconds / 1_000_000_000_000_000) ms of running (call_deadline_ms)"
                    )
                }
            }
            return state.killedFor
        }
        if let verdict {
            logger.notice("debug session (process \(pid)) is killed: \(verdict.message)")
            kill(pid, SIGKILL)
        }
    }

    private static func residentBytes(of pid: pid_t) -> Int {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/statm", encoding: .utf8) else { return 0 }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    private static func describe(_ status: Int32) -> String {
        let signal = status & 0x7f
        if signal == 0 { return "exit \((status >> 8) & 0xff)" }
        return "signal \(signal)"
    }
}

extension NIODeadline {
    fileprivate var durationUntilNow: Duration { .nanoseconds((NIODeadline.now() - self).nanoseconds) }
}
