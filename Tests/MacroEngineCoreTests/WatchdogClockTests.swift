import CJSCStartup
import Foundation
import Synchronization
import Testing

/// `watchdogCountsWallTime` (macrod's engine): on that thread JavaScriptCore's CPU-time reads
/// (`CLOCK_THREAD_CPUTIME_ID`) read the monotonic clock, without a system call; every other
/// thread keeps its CPU time (debug sessions count running time only).
@Suite struct WatchdogClockTests {
    /// How far the thread's CPU-time clock moves over a 30 ms sleep, on a new thread.
    private static func cpuClockAcrossASleep(monotonic: Bool) -> UInt64 {
        let result = Mutex<UInt64>(0)
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            if monotonic { macroengine_thread_cpu_clock_is_monotonic() }
            var before = timespec(), after = timespec()
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &before)
            usleep(30_000)
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &after)
            let nanoseconds = (Int64(after.tv_sec) - Int64(before.tv_sec)) * 1_000_000_000 + Int64(after.tv_nsec) - Int64(before.tv_nsec)
            result.withLock { $0 = UInt64(max(0, nanoseconds)) }
            done.signal()
        }
        thread.start()
        done.wait()
        return result.withLock { $0 }
    }

    @Test func onTheEngineThreadTheCPUClockIsTheWallClock() {
        #expect(Self.cpuClockAcrossASleep(monotonic: true) >= 30_000_000)
    }

    @Test func everyOtherThreadKeepsItsCPUTime() {
        // Asleep, a thread uses next to no CPU.
        #expect(Self.cpuClockAcrossASleep(monotonic: false) < 10_000_000)
    }
}
