import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A request-reply protocol as the load generator sees it: the bytes of one request and how to
/// tell that a reply is complete.
struct Wire: Sendable {
    var request: [UInt8]
    var complete: @Sendable (UnsafeBufferPointer<UInt8>) -> Int?
    /// Checked once per connection on the first reply (a benchmark of error replies is worthless).
    var validate: @Sendable ([UInt8]) -> String?
}

/// What one load run measured.
struct LoadResult {
    var clients: Int
    var calls: Int
    var seconds: Double
    var latencies: [UInt64]
    /// CPU time this process (the clients) spent per call, in microseconds.
    var clientCPUMicros: Double
    /// CPU time the server process spent per call, in microseconds (nan when not measured).
    var serverCPUMicros: Double
    /// Context switches of the server's threads per call (nan when not measured).
    var serverContextSwitches: Double = .nan

    var callsPerSecond: Double { Double(calls) / seconds }
    func percentile(_ p: Double) -> Double {
        guard !latencies.isEmpty else { return .nan }
        let index = min(latencies.count - 1, Int((Double(latencies.count) * p).rounded(.up)) - 1)
        return Double(latencies[max(0, index)]) / 1000
    }
}

/// Runs `clients` connections in parallel threads, each sending `callsPerClient` requests one
/// at a time (send, wait for the reply, send the next), after `warmup` unmeasured calls each.
/// With `pipeline` > 1 each client sends that many requests in one write, then reads their
/// replies (redis-benchmark's `-P`); each request's latency is its batch's round trip.
func runLoad(path: String, wire: Wire, clients: Int, callsPerClient: Int, warmup: Int = 200, pipeline: Int = 1, server: Child? = nil) throws -> LoadResult {
    let depth = max(1, pipeline)
    let batch = [UInt8](Array(repeating: wire.request, count: depth).joined())
    let failures = Mutex<[String]>([])
    let results = Mutex<[[UInt64]]>([])
    let ready = DispatchSemaphore(value: 0)
    let go = DispatchSemaphore(value: 0)
    let done = DispatchGroup()
    for _ in 0..<clients {
        done.enter()
        let thread = Thread {
            defer { done.leave() }
            var latencies = [UInt64](repeating: 0, count: callsPerClient)
            do {
                let socket = try BlockingSocket(path: path)
                try wire.request.withUnsafeBytes { (request) throws in
                    for i in 0..<warmup {
                        try socket.send(request)
                        let reply = try socket.receive(wire.complete)
                        if i == 0, let problem = wire.validate(reply) { throw BenchError(problem) }
                    }
                    ready.signal()
                    go.wait()
                    if depth == 1 {
                        for i in 0..<callsPerClient {
                            let start = monotonicNanoseconds()
                            try socket.send(request)
                            try socket.receive(wire.complete)
                            latencies[i] = monotonicNanoseconds() - start
                        }
                    }
                }
                if depth > 1 {
                    try batch.withUnsafeBytes { (requests) throws in
                        var i = 0
                        while i < callsPerClient {
                            let start = monotonicNanoseconds()
                            try socket.send(requests)
                            for _ in 0..<depth { _ = try socket.receive(wire.complete) }
                            let elapsed = monotonicNanoseconds() - start
                            for j in i..<min(i + depth, callsPerClient) { latencies[j] = elapsed }
                            i += depth
                        }
                    }
                }
                results.locked { $0.append(latencies) }
            } catch {
                failures.locked { $0.append("\(error)") }
                ready.signal()
            }
        }
        thread.stackSize = 1 << 20
        thread.start()
    }
    for _ in 0..<clients { ready.wait() }
    if let failure = failures.locked({ $0.first }) {
        for _ in 0..<clients { go.signal() }
        done.wait()
        throw BenchError(failure)
    }
    let cpuBefore = processCPUSeconds()
    let serverBefore = server?.cpuSeconds ?? .nan
    let switchesBefore = server?.contextSwitches ?? .nan
    let start = monotonicSeconds()
    for _ in 0..<clients { go.signal() }
    done.wait()
    let seconds = monotonicSeconds() - start
    let cpu = processCPUSeconds() - cpuBefore
    let serverCPU = (server?.cpuSeconds ?? .nan) - serverBefore
    let switches = (server?.contextSwitches ?? .nan) - switchesBefore
    if let failure = failures.locked({ $0.first }) { throw BenchError(failure) }
    let all = results.locked { $0.flatMap { $0 } }.sorted()
    return LoadResult(
        clients: clients, calls: all.count, seconds: seconds, latencies: all,
        clientCPUMicros: cpu / Double(max(all.count, 1)) * 1e6,
        serverCPUMicros: serverCPU / Double(max(all.count, 1)) * 1e6,
        serverContextSwitches: switches / Double(max(all.count, 1)))
}

/// User + system CPU seconds of this process.
func processCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
        + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
}
