import ArgumentParser
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// `macro-bench ladder`: one `macro.call` taken apart, in-process. Each step of the call's way
/// through macrod (the line cut, the parse, the routing, the params, the call into JavaScript,
/// the turn, the statistics, the journal line, the encoding of the reply, the NIO pipeline) is
/// timed alone, in a loop of `--iterations` (the median of `--runs` runs), with the heap
/// allocations it makes per call; then the whole call over a Unix socket, in NIO pipelines of
/// one, two and four handlers and through a macrod running in this process. `make bench` prints
/// it after the main table (docs/performance.md, "The ladder").
struct LadderCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ladder",
        abstract: "Time each step of one macro.call in-process: ns and heap allocations per call.",
        discussion: """
            Allocations are counted when Benchmarks/malloc-count.c is preloaded (make bench builds it and \
            sets LD_PRELOAD); without it the column shows n/a. Use a release build.
            """)

    @Option(help: "Calls per run of each in-memory step.")
    var iterations = 200_000

    @Option(help: "Round trips per run of each socket step.")
    var roundTrips = 20_000

    @Option(help: "Runs of each step (the median is shown).")
    var runs = 5

    @Flag(help: "Leave out the socket steps (NIO pipelines and the in-process macrod).")
    var noSockets = false

    @Flag(help: "Time steps by the process's CPU time instead of the wall clock (for A/B runs on a busy machine: a preempted step is not charged).")
    var cpuTime = false

    mutating func run() throws {
        if cpuTime { LadderClock.setCPUTime() }
        let ladder = try Ladder(iterations: iterations, roundTrips: roundTrips, runs: runs)
        var rows = try ladder.steps()
        if !noSockets { rows += try ladder.socketSteps() }
        LadderTable(rows: rows, runs: runs, iterations: iterations, roundTrips: roundTrips).print()
        // The in-process macrod runs until the process ends (it has no stop from outside its
        // service group); nothing of it needs saving.
        fflush(nil)
        Glibc.exit(0)
    }
}

/// The heap allocation count of `Benchmarks/malloc-count.c`, when it is preloaded: every malloc,
/// calloc, realloc and aligned allocation of the process, on every thread (the Swift runtime's
/// objects, arrays, strings, closures' contexts, NIO's buffers and promises; not JavaScriptCore's
/// own garbage-collected heap).
enum MallocCounter {
    private static let function: (@convention(c) () -> UInt64)? = {
        guard let process = dlopen(nil, RTLD_NOW), let symbol = dlsym(process, "macro_bench_malloc_count") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) () -> UInt64).self)
    }()

    /// True when the counter is preloaded.
    static var isAvailable: Bool { function != nil }

    /// Allocations so far (0 without the counter).
    static func count() -> UInt64 { function?() ?? 0 }
}

/// One step's figures.
struct LadderRow {
    /// The step's number and name.
    var step: String
    /// Nanoseconds per call (median of the runs).
    var nanoseconds: Double
    /// Heap allocations per call (the fewest of the runs: other threads' allocations only add).
    var allocations: Double?
    /// Whether the step adds to the running total (a step that contains others does not).
    var accumulates = true
    /// What else to say (server CPU per call of a socket step).
    var note = ""
}

/// Times `body(n)` (a loop of `n` calls): a warm-up run of a tenth, then `runs` runs of
/// `iterations`. Nanoseconds per call: the median run; allocations per call: the fewest.
func measureSteps(runs: Int, iterations: Int, _ body: (Int) throws -> Void) rethrows -> (nanoseconds: Double, allocations: Double?) {
    try body(max(1, iterations / 10))
    var times: [Double] = []
    var fewest = Double.infinity
    for _ in 0..<runs {
        let allocationsBefore = MallocCounter.count()
        let start = LadderClock.now()
        try body(iterations)
        let elapsed = LadderClock.now() - start
        let allocations = MallocCounter.count() - allocationsBefore
        times.append(Double(elapsed) / Double(iterations))
        fewest = min(fewest, Double(allocations) / Double(iterations))
    }
    times.sort()
    return (times[times.count / 2], MallocCounter.isAvailable ? fewest : nil)
}

/// The ladder's table: each step, and the running total of the steps that add up.
struct LadderTable {
    let rows: [LadderRow]
    let runs: Int
    let iterations: Int
    let roundTrips: Int

    func print() {
        let counter = MallocCounter.isAvailable ? "malloc-count.so" : "n/a: Benchmarks/malloc-count.c not preloaded"
        Swift.print(
            "\n9. The ladder: one macro.call step by step (in-process; median of \(runs) runs of \(iterations) calls, \(roundTrips) round trips on sockets; allocations: \(counter))"
        )
        Swift.print("  " + pad("step", 58) + lpad("ns/call", 10) + lpad("allocs", 9) + lpad("sum ns", 10) + lpad("sum allocs", 12))
        var totalNanoseconds = 0.0
        var totalAllocations = 0.0
        for row in rows {
            var sums = lpad("", 10) + lpad("", 12)
            if row.accumulates {
                totalNanoseconds += row.nanoseconds
                totalAllocations += row.allocations ?? 0
                sums =
                    lpad(String(format: "%.0f", totalNanoseconds), 10)
                    + lpad(row.allocations == nil ? "n/a" : String(format: "%.1f", totalAllocations), 12)
            }
            let allocations = row.allocations.map { String(format: "%.1f", $0) } ?? "n/a"
            Swift.print("  " + pad(row.step, 58) + lpad(String(format: "%.0f", row.nanoseconds), 10) + lpad(allocations, 9) + sums)
            if !row.note.isEmpty { Swift.print("      note: " + row.note) }
        }
    }

    private func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text + " " : text + String(repeating: " ", count: width - text.count)
    }

    private func lpad(_ text: String, _ width: Int) -> String {
        text.count >= width ? " " + text : String(repeating: " ", count: width - text.count) + text
    }
}

/// The ladder's clock: the wall clock, or the process's CPU time (`--cpu-time`).
enum LadderClock {
    private static let cpu = Atomic<Bool>(false)

    /// Times the steps by CPU time from now on.
    static func setCPUTime() { cpu.store(true, ordering: .relaxed) }

    /// Nanoseconds on the chosen clock.
    static func now() -> UInt64 {
        guard cpu.load(ordering: .relaxed) else { return monotonicNanoseconds() }
        var time = timespec()
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }
}
