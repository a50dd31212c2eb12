import CSystemShims
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A child process started with `posix_spawn(3)`, in place of Foundation's `Process`.
///
/// Why not `Process`: on Linux, swift-corelibs-foundation's `Process.run()` lists
/// `/proc/self/fd` to close the descriptors the child should not inherit, and copies 256 bytes
/// out of each directory entry, which is often shorter. When the last entry ends near an unmapped
/// page, the copy reads past it and the parent crashes in `memmove`
/// (swiftlang/swift-corelibs-foundation#5472, fixed after the 6.3.1 toolchain). A test process
/// that starts hundreds of children met it about once in a CI run. Here the child closes what it
/// should not inherit itself (`posix_spawn_file_actions_addclosefrom_np`), and its exit is reaped
/// with `waitpid` by whoever asks (no manager thread, no SIGCHLD monitor). A wait is one
/// `poll(2)` on the child's pidfd (`pidfd_open(2)`), which becomes readable when it ends: no
/// sleep, no polling.
///
/// Set the properties, then ``run()`` once; ``poll()``, ``wait()`` and ``wait(timeout:)`` reap it.
/// Standard streams take a `FileHandle` (dup'ed into the child), a `Pipe` (the child gets its end,
/// which the parent then closes) or nil (`/dev/null`); by default the parent's own.
public final class ChildProcess: Sendable {
    /// How a child ended.
    public enum Termination: Sendable, Equatable {
        /// It exited with this status.
        case exit(Int32)
        /// A signal killed it.
        case signal(Int32)

        /// The shell's convention: the exit status, or 128 plus the signal's number.
        public var status: Int32 {
            switch self {
            case .exit(let status): status
            case .signal(let signal): 128 + signal
            }
        }
    }

    private struct Setup {
        var executableURL: URL?
        var arguments: [String] = []
        var environment: [String: String]?
        var currentDirectoryURL: URL?
        var standardInput: (any Sendable)? = FileHandle.standardInput
        var standardOutput: (any Sendable)? = FileHandle.standardOutput
        var standardError: (any Sendable)? = FileHandle.standardError
    }

    private struct State {
        var pid: pid_t = 0
        /// Readable once the child has ended (-1: none; then a wait looks every 2 ms).
        var pidfd: Int32 = -1
        var termination: Termination?
    }

    private let setup = Mutex(Setup())
    private let state = Mutex(State())

    /// A child yet to be started.
    public init() {}

    deinit {
        let pidfd = state.withLock { $0.pidfd }
        if pidfd >= 0 { close(pidfd) }
    }

    /// The program to run.
    public var executableURL: URL? {
        get { setup.withLock { $0.executableURL } }
        set { setup.withLock { $0.executableURL = newValue } }
    }

    /// Its arguments (without the program's name, which is its path).
    public var arguments: [String] {
        get { setup.withLock { $0.arguments } }
        set { setup.withLock { $0.arguments = newValue } }
    }

    /// Its whole environment (nil: this process's).
    public var environment: [String: String]? {
        get { setup.withLock { $0.environment } }
        set { setup.withLock { $0.environment = newValue } }
    }

    /// The directory it starts in (nil: this process's).
    public var currentDirectoryURL: URL? {
        get { setup.withLock { $0.currentDirectoryURL } }
        set { setup.withLock { $0.currentDirectoryURL = newValue } }
    }

    /// Its standard input: a `FileHandle`, a `Pipe` (it reads the pipe), or nil (`/dev/null`).
    public var standardInput: (any Sendable)? {
        get { setup.withLock { $0.standardInput } }
        set { setup.withLock { $0.standardInput = newValue } }
    }

    /// Its standard output: a `FileHandle`, a `Pipe` (it writes the pipe), or nil (`/dev/null`).
    public var standardOutput: (any Sendable)? {
        get { setup.withLock { $0.standardOutput } }
        set { setup.withLock { $0.standardOutput = newValue } }
    }

    /// Its standard error: a `FileHandle`, a `Pipe` (it writes the pipe), or nil (`/dev/null`).
    public var standardError: (any Sendable)? {
        get { setup.withLock { $0.standardError } }
        set { setup.withLock { $0.standardError = newValue } }
    }

    /// Its process id (0 before ``run()``).
    public var processIdentifier: pid_t { state.withLock { $0.pid } }

    /// Why starting a child failed.
    public struct SpawnError: Error, CustomStringConvertible {
        /// The program.
        public var path: String
        /// The errno `posix_spawn` or a file action gave.
        public var code: Int32
        /// What went wrong, with the program's path.
        public var description: String { "cannot run \(path): \(String(cString: strerror(code)))" }
    }

    /// Starts it. Throws ``SpawnError`` when the program cannot be run.
    public func run() throws {
        let setup = setup.withLock { $0 }
        guard let path = setup.executableURL?.path else { throw SpawnError(path: "(no executable)", code: ENOENT) }
        guard state.withLock({ $0.pid }) == 0 else { throw SpawnError(path: path, code: EBUSY) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // Its own process group (as Process did: a terminal's Ctrl-C is not its), and a signal
        // mask of its own (none blocked, whatever the spawning thread blocks).
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK))

        // The parent's copies of the pipes' child ends, closed once it runs.
        var childEnds: [FileHandle] = []
        func attach(_ stream: (any Sendable)?, to target: Int32, childReads: Bool) {
            switch stream {
            case let pipe as Pipe:
                let end = childReads ? pipe.fileHandleForReading : pipe.fileHandleForWriting
                posix_spawn_file_actions_adddup2(&actions, end.fileDescriptor, target)
                childEnds.append(end)
            case let handle as FileHandle:
                posix_spawn_file_actions_adddup2(&actions, handle.fileDescriptor, target)
            default:
                posix_spawn_file_actions_addopen(&actions, target, "/dev/null", childReads ? O_RDONLY : O_WRONLY, 0)
            }
        }
        attach(setup.standardInput, to: 0, childReads: true)
        attach(setup.standardOutput, to: 1, childReads: false)
        attach(setup.standardError, to: 2, childReads: false)
        var failed = macroengine_spawn_closefrom(&actions, 3)
        if failed == 0, let directory = setup.currentDirectoryURL?.path { failed = macroengine_spawn_chdir(&actions, directory) }
        guard failed == 0 else { throw SpawnError(path: path, code: failed) }

        let argv = ([path] + setup.arguments).map { strdup($0) } + [nil]
        defer { for argument in argv { free(argument) } }
        let environment = setup.environment.map { $0.map { strdup("\($0.key)=\($0.value)") } + [nil] }
        defer { for entry in environment ?? [] { free(entry) } }
        var pid: pid_t = 0
        let spawned =
            if let environment { posix_spawn(&pid, path, &actions, &attributes, argv, environment) } else {
                posix_spawn(&pid, path, &actions, &attributes, argv, environ)
            }
        guard spawned == 0 else { throw SpawnError(path: path, code: spawned) }
        let pidfd = macroengine_pidfd_open(pid)
        state.withLock {
            $0.pid = pid
            $0.pidfd = pidfd
        }
        for end in childEnds { try? end.close() }
    }

    /// How it ended, once it has; nil while it runs (or before ``run()``).
    public func poll() -> Termination? {
        state.withLock { state in
            if let termination = state.termination { return termination }
            guard state.pid > 0 else { return nil }
            var raw: Int32 = 0
            guard waitpid(state.pid, &raw, WNOHANG) == state.pid else { return nil }
            let signal = raw & 0x7f
            state.termination = signal == 0 ? .exit((raw >> 8) & 0xff) : .signal(signal)
            return state.termination
        }
    }

    /// A descriptor that becomes readable when it ends (its pidfd), to wait in `poll(2)` beside
    /// others; empty when there is none (then ask ``poll()``).
    public var exitDescriptors: [Int32] {
        let pidfd = state.withLock { $0.pidfd }
        return pidfd >= 0 ? [pidfd] : []
    }

    /// Whether it has started and not ended yet.
    public var isRunning: Bool { processIdentifier > 0 && poll() == nil }

    /// Blocks until it ends and returns how.
    @discardableResult
    public func wait() -> Termination {
        while true {
            if let termination = wait(timeout: .seconds(3600)) { return termination }
        }
    }

    /// Blocks until it ends or `timeout` passes; nil when it is still running.
    public func wait(timeout: Duration) -> Termination? {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        let pidfd = state.withLock { $0.pidfd }
        while clock.now < deadline {
            if let termination = poll() { return termination }
            guard pidfd >= 0 else {
                usleep(2_000)
                continue
            }
            // Until the pidfd says it ended (or the time is up).
            let left = deadline - clock.now
            let milliseconds = Int32(clamping: max(1, left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000))
            var waiting = pollfd(fd: pidfd, events: Int16(POLLIN), revents: 0)
            _ = Glibc.poll(&waiting, 1, milliseconds)
        }
        return poll()
    }

    /// Sends it `signal` (SIGTERM by default), while it runs.
    public func signal(_ signal: Int32 = SIGTERM) {
        let pid = processIdentifier
        if pid > 0, poll() == nil { kill(pid, signal) }
    }
}
