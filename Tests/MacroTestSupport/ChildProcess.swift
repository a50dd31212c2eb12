import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Waiting for a child without relying only on Foundation's SIGCHLD monitor: when many children
/// end at once (the suite starts hundreds of macrod, macro, tmux and browser processes in
/// parallel), that monitor was seen to miss an exit, leaving a zombie and `waitUntilExit()`
/// blocked forever. This reaps the pid itself (`waitpid`, WNOHANG, polled), and accepts
/// Foundation's verdict when Foundation got there first.
public final class ChildExit: Sendable {
    private let pid: pid_t
    private let reaped = Mutex<Int32?>(nil)

    /// Watches `process`, which must have been started.
    public init(_ process: Process) { pid = process.processIdentifier }

    /// The exit status (128 + signal for a signal), once known; nil while it runs.
    public func poll(_ process: Process) -> Int32? {
        if let status = reaped.locked({ $0 }) { return status }
        var raw: Int32 = 0
        let result = waitpid(pid, &raw, WNOHANG)
        if result == pid {
            let signal = raw & 0x7f
            let status = signal == 0 ? (raw >> 8) & 0xff : 128 + signal
            reaped.locked { $0 = status }
            return status
        }
        // Not ours to reap any more (Foundation did): its verdict, once it has one.
        if result < 0, !process.isRunning {
            return process.terminationReason == .uncaughtSignal ? 128 + process.terminationStatus : process.terminationStatus
        }
        return nil
    }

    /// Blocks until the process has ended (polling every 2 ms) and returns its status.
    public func wait(_ process: Process) -> Int32 {
        while true {
            if let status = poll(process) { return status }
            usleep(2_000)
        }
    }
}
