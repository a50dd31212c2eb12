import Foundation

#if canImport(Glibc)
import Glibc
#endif

// How the tests wait. Almost every wait is for something that is announced, and waits on the
// announcement itself, never on time:
// - a JSON-RPC notification: `RPCClient.waitFor(_:where:)` (`macro.loaded`, `log` records,
//   `macro.triggered`, ...);
// - macrod's sd_notify `READY=1`, at its start and after each engine restart:
//   `DaemonProcess.nextReady(timeout:)`;
// - a child's exit: `ChildProcess.wait(timeout:)` (its pidfd);
// - a change to a file in a directory: `DirectoryEvents` (inotify);
// - in-process, a console line or the exception handler of the engine.
// `eventually(timeout:_:)` is for the few states nothing announces (its comment lists them).

/// Polls `attempt` until it returns a value and returns it; nil when `timeout` passes first.
///
/// Only for a state that nothing announces, so that it can only be asked for:
/// - a call having started (`macro.running`): while a call's JavaScript holds the engine's
///   thread, macrod holds every connection's output (its busy control), so a call cannot say
///   it runs; only the control lane answers, and only when asked. In-process, a macro can say
///   so with a console line, except where its source is what a test checks (stop locations);
///   then `MacroEngine.runningCalls` is asked;
/// - the number of connections macrod still keeps (`engine.status`) once peers hung up: a close
///   is announced to nobody else;
/// - a request refused with -32005 (queue full, "try again"): the protocol's answer is a retry.
///
/// Bounded twice: by `timeout`, and by a back-off that starts at 1 ms and doubles up to 50 ms
/// (so a 10 s wait asks at most about 210 times, and a quick answer is seen within a few ms).
public func eventually<T>(timeout: Duration = .seconds(10), _ attempt: () throws -> T?) rethrows -> T? {
    let deadline = ContinuousClock.now + timeout
    var pause = Duration.milliseconds(1)
    while true {
        if let value = try attempt() { return value }
        let left = deadline - ContinuousClock.now
        guard left > .zero else { return nil }
        let nap = min(pause, left)
        usleep(useconds_t(nap.components.seconds * 1_000_000 + nap.components.attoseconds / 1_000_000_000_000))
        pause = min(pause * 2, .milliseconds(50))
    }
}

/// The changes in one directory (inotify): files created, written, closed, renamed, deleted.
/// ``until(timeout:_:)`` looks at a condition again after each change, and at nothing else.
public final class DirectoryEvents {
    private let fd: Int32
    /// The directory watched.
    public let directory: String

    /// Starts watching `directory` (which must exist): changes from now on are seen.
    public init(_ directory: String) throws {
        self.directory = directory
        fd = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
        guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        let mask = UInt32(IN_CREATE | IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_ATTRIB)
        guard inotify_add_watch(fd, directory, mask) >= 0 else {
            let error = errno
            close(fd)
            throw POSIXError(POSIXErrorCode(rawValue: error) ?? .EIO)
        }
    }

    deinit { close(fd) }

    /// Looks at `condition` now and after each change in the directory, until it gives a value,
    /// and returns that; nil when `timeout` passes first.
    public func until<T>(timeout: Duration = .seconds(10), _ condition: () throws -> T?) rethrows -> T? {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let value = try condition() { return value }
            guard waitForReadable([fd], until: deadline) != nil else { return try condition() }
            var buffer = [UInt8](repeating: 0, count: 4096)
            while buffer.withUnsafeMutableBytes({ read(fd, $0.baseAddress, $0.count) }) > 0 {}
        }
    }

    /// Waits until the file `path` (in this directory) exists and `condition` holds for its
    /// text; returns the text, nil when `timeout` passes first.
    public func file(_ path: String, timeout: Duration = .seconds(10), where condition: (String) -> Bool = { _ in true }) -> String? {
        until(timeout: timeout) {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8), condition(text) else { return nil }
            return text
        }
    }
}

/// Lets `duration` of wall-clock time pass. Not a wait for anything: for a test whose input is a
/// length of time, such as a debug session stopped for longer than its time limit and call
/// deadline together, to show that time stopped is not counted against them. Nothing happens
/// in that time that could be announced (that is what is checked), and the clocks it must pass
/// on (the session's running budget and watchdog, and in `macro dap` those of a debug worker,
/// another process) cannot be replaced by a test clock.
public func letTimePass(_ duration: Duration) async throws {
    try await Task.sleep(for: duration)
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
