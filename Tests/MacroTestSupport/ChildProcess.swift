import CSystemShims
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Waiting for a child without relying only on Foundation's own watch: when many children end at
/// once (the suite starts hundreds of macrod, macro, tmux and browser processes in parallel),
/// Foundation was seen to miss an exit, leaving a zombie and `waitUntilExit()` blocked forever.
///
/// The kernel says when the child ends: a pidfd (`pidfd_open(2)`) becomes readable then, and
/// this reaps the pid itself (`waitpid`). Foundation reaps its children too (when their end of
/// its socket pair closes); when it got there first, its termination handler, installed before
/// the launch, hands over its verdict through a pipe. Both are descriptors, so a wait is one
/// `poll(2)`, with no sleep and no polling.
public final class ChildExit: Sendable {
    private let pid: pid_t
    /// Readable once the process has ended; -1 when it had already been reaped at launch.
    private let pidfd: Int32
    private let verdict: Verdict
    /// The pidfd said the process ended: from then on only the verdict's pipe is waited for.
    private let ended = Atomic<Bool>(false)

    /// Foundation's verdict: the status, and a pipe made readable when it is set.
    private final class Verdict: Sendable {
        let status = Mutex<Int32?>(nil)
        let read: Int32
        let write: Int32

        init() {
            var fds: [Int32] = [-1, -1]
            precondition(pipe(&fds) == 0, "pipe: \(String(cString: strerror(errno)))")
            for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
            (read, write) = (fds[0], fds[1])
        }

        deinit {
            close(read)
            close(write)
        }

        func set(_ value: Int32) {
            let first = status.withLock { status -> Bool in
                guard status == nil else { return false }
                status = value
                return true
            }
            guard first else { return }
            var byte: UInt8 = 1
            _ = Glibc.write(write, &byte, 1)
        }
    }

    /// Launches `process` (configured, not yet run) and watches it.
    public static func start(_ process: Process) throws -> ChildExit {
        let verdict = Verdict()
        // Before the launch: Foundation reads the handler when the child ends.
        process.terminationHandler = { process in
            verdict.set(process.terminationReason == .uncaughtSignal ? 128 + process.terminationStatus : process.terminationStatus)
        }
        try process.run()
        return ChildExit(pid: process.processIdentifier, verdict: verdict)
    }

    private init(pid: pid_t, verdict: Verdict) {
        self.pid = pid
        self.verdict = verdict
        pidfd = macroengine_pidfd_open(pid)
    }

    deinit {
        if pidfd >= 0 { close(pidfd) }
    }

    /// The exit status (128 + signal for a signal), once known; nil while it runs. Does not block.
    public var status: Int32? {
        if let status = verdict.status.withLock({ $0 }) { return status }
        var raw: Int32 = 0
        guard waitpid(pid, &raw, WNOHANG) == pid else { return nil }
        let signal = raw & 0x7f
        verdict.set(signal == 0 ? (raw >> 8) & 0xff : 128 + signal)
        return verdict.status.withLock { $0 }
    }

    /// The descriptors a `poll(2)` waits on for the exit (the pidfd until it fired, and the pipe).
    var descriptors: [Int32] {
        (pidfd >= 0 && !ended.load(ordering: .relaxed) ? [pidfd] : []) + [verdict.read]
    }

    /// Notes which of ``descriptors`` `poll(2)` found readable.
    func readable(_ fd: Int32) {
        if fd == pidfd { ended.store(true, ordering: .relaxed) }
    }

    /// Blocks until the process has ended and returns its status; nil when `timeout` passes first.
    public func wait(timeout: Duration? = nil) -> Int32? {
        let deadline = timeout.map { ContinuousClock.now + $0 }
        while true {
            if let status { return status }
            if ended.load(ordering: .relaxed) {
                // Ended: reapable now (waitid without reaping returns at once), or reaped by
                // Foundation (ECHILD), whose verdict then comes through the pipe.
                var info = siginfo_t()
                if waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) == 0 || errno == EINTR { continue }
                guard waitForReadable([verdict.read], until: deadline) != nil else { return nil }
                continue
            }
            guard let fd = waitForReadable(descriptors, until: deadline) else { return nil }
            readable(fd)
        }
    }

    /// Blocks until the process has ended and returns its status.
    @discardableResult
    public func wait() -> Int32 {
        wait(timeout: nil)!
    }
}

/// Blocks in `poll(2)` until one of `fds` is readable (or hung up) and returns it; nil when
/// `deadline` passes first (nil: no deadline).
func waitForReadable(_ fds: [Int32], until deadline: ContinuousClock.Instant?) -> Int32? {
    var polled = fds.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
    while true {
        var milliseconds: Int32 = -1
        if let deadline {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return nil }
            milliseconds = Int32(min(left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000 + 1, Int64(Int32.max)))
        }
        let result = poll(&polled, nfds_t(polled.count), milliseconds)
        if result < 0, errno == EINTR { continue }
        if let ready = polled.first(where: { $0.revents != 0 }) { return ready.fd }
        if result <= 0, deadline != nil, ContinuousClock.now >= deadline! { return nil }
    }
}
