import ArgumentParser
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// `macro-bench soak`: the leak soak and the backpressure check of the reliability guarantees.
/// Exits 1 when the daemon's memory grows past the bounds.
struct SoakCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "soak",
        abstract: "2 x 100,000 calls, 1,000 reloads, 1,000 connections, then a million pipelined requests nobody reads (make soak).",
        discussion: "Prints macrod's RSS before and after each phase; fails (exit 1) when it grows by more than --max-growth-mib.")

    @Option(help: "Calls in the call phase.")
    var calls = 100_000
    @Option(help: "Macro saves in the reload phase.")
    var reloads = 1_000
    @Option(help: "Connect, call, disconnect cycles.")
    var connections = 1_000
    @Option(help: "Requests one client pipelines without reading replies.")
    var pipelined = 1_000_000
    @Option(help: "Allowed RSS growth (MiB) from after the warm-up to the end of the soak.")
    var maxGrowthMib = 32.0
    @Option(help: "Allowed RSS growth (MiB) while the pipelining client does not read.")
    var maxBackpressureGrowthMib = 64.0

    func run() throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let macrod = try Macrod(binaries: binaryDirectory(), directory: directory)
        defer { macrod.stop() }
        let request = Macrod.call("add", "0.5")
        let wire = Wire(request: request, complete: BlockingSocket.line, validate: Macrod.validate)
        func rss() -> String { format(macrod.child.residentMiB) + " MiB" }

        // Warm-up: JIT, heaps and buffers reach their working size.
        _ = try runLoad(path: macrod.socketPath, wire: wire, clients: 4, callsPerClient: 2_500, warmup: 0)
        _ = try reloadTimes(macrod: macrod, saves: 50)
        for _ in 0..<50 { try oneShot(macrod.socketPath, request) }
        let before = macrod.child.residentMiB
        print("after warm-up:           RSS \(rss())")

        _ = try runLoad(path: macrod.socketPath, wire: wire, clients: 4, callsPerClient: calls / 4, warmup: 0)
        let afterCalls = macrod.child.residentMiB
        print("after \(calls) calls:      RSS \(rss())")
        // A leak grows with every round; a heap reaching its working size does not.
        _ = try runLoad(path: macrod.socketPath, wire: wire, clients: 4, callsPerClient: calls / 4, warmup: 0)
        let secondRound = macrod.child.residentMiB - afterCalls
        print("after \(calls) more calls: RSS \(rss()) (\(secondRound >= 0 ? "+" : "")\(format(secondRound)) MiB in the second round)")
        _ = try reloadTimes(macrod: macrod, saves: reloads / 2, first: 1_000)
        let afterReloads = macrod.child.residentMiB
        print("after \(reloads / 2) reloads:      RSS \(rss())")
        _ = try reloadTimes(macrod: macrod, saves: reloads - reloads / 2, first: 1_000 + reloads / 2)
        let secondReloads = macrod.child.residentMiB - afterReloads
        print("after \(reloads - reloads / 2) more reloads: RSS \(rss()) (\(secondReloads >= 0 ? "+" : "")\(format(secondReloads)) MiB in the second round)")
        for _ in 0..<connections { try oneShot(macrod.socketPath, request) }
        let after = macrod.child.residentMiB
        print("after \(connections) connections: RSS \(rss())")
        let growth = after - before
        print("leak soak: RSS \(format(before)) -> \(format(after)) MiB (\(growth >= 0 ? "+" : "")\(format(growth)) MiB; bound +\(format(maxGrowthMib)))")

        // Backpressure: one client writes without reading; memory stays bounded, others are served.
        let peak = try pipelineWithoutReading(macrod: macrod)
        print(
            "backpressure: \(pipelined) pipelined requests, RSS \(format(after)) -> peak \(format(peak.peak)) MiB while unread; other client answered in \(format(peak.otherMillis)) ms; all \(pipelined) replies received"
        )
        guard growth <= maxGrowthMib, secondRound <= maxGrowthMib / 4, secondReloads <= maxGrowthMib / 4, peak.peak - after <= maxBackpressureGrowthMib else {
            print("FAILED: memory grew past the bound")
            throw ExitCode(1)
        }
        print("soak passed")
    }

    private func oneShot(_ path: String, _ request: [UInt8]) throws {
        let socket = try BlockingSocket(path: path)
        try socket.send(request)
        try socket.receive(BlockingSocket.line)
    }

    /// A writer thread sends `pipelined` small requests without reading; once it is blocked (the
    /// daemon stopped reading), RSS is sampled and another client is served; then the replies are
    /// read and counted.
    private func pipelineWithoutReading(macrod: Macrod) throws -> (peak: Double, otherMillis: Double) {
        let socket = try BlockingSocket(path: macrod.socketPath)
        let line = Array("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"progress.get\"}\n".utf8)
        let chunk = Array((0..<1_000).map { _ in line }.joined())
        let written = Atomic<Int>(0)
        let count = pipelined
        let fd = socket.fd
        // The writer uses the descriptor only for writing; this thread only reads from it.
        let writer = Thread {
            for _ in 0..<(count / 1_000) {
                var offset = 0
                while offset < chunk.count {
                    let n = chunk.withUnsafeBytes { write(fd, $0.baseAddress! + offset, chunk.count - offset) }
                    if n < 0 { if errno == EINTR { continue }; return }
                    offset += n
                }
                written.add(1_000, ordering: .relaxed)
            }
        }
        writer.start()
        // Let the writer run into the daemon's backpressure (its writes stop advancing).
        var peak = macrod.child.residentMiB
        var last = -1
        while written.load(ordering: .relaxed) != last {
            last = written.load(ordering: .relaxed)
            for _ in 0..<10 {
                usleep(100_000)
                peak = max(peak, macrod.child.residentMiB)
            }
        }
        let start = monotonicSeconds()
        try oneShot(macrod.socketPath, Macrod.call("add", "0.5"))
        let otherMillis = (monotonicSeconds() - start) * 1000
        // Now read everything: the daemon resumes, the writer finishes.
        var replies = 0
        while replies < count {
            try socket.receive(BlockingSocket.line)
            replies += 1
            if replies % 100_000 == 0 { peak = max(peak, macrod.child.residentMiB) }
        }
        return (peak, otherMillis)
    }
}
