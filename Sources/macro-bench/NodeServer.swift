import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The second anchor: `Benchmarks/node-server.js`, the plain Node.js NDJSON server a user might
/// write instead of macrod (JSON.parse a line, call a JS function, one journal write, the reply),
/// on a Unix socket in the benchmark's temporary directory. It speaks macrod's request line.
final class NodeServer {
    let socketPath: String
    let version: String
    let child: Child

    init(script: String, directory: String) throws {
        guard let node = which("node") ?? which("nodejs") else {
            throw BenchError("node is not installed (make bench installs Debian's nodejs; or pass --no-node)")
        }
        socketPath = "\(directory)/node.sock"
        version = ((try? captureOutput(node, ["--version"])) ?? "?").trimmingCharacters(in: .whitespacesAndNewlines)
        child = try Child(node, [script, socketPath, "\(directory)/node.journal"], name: "node", log: "\(directory)/node.log")
        let deadline = monotonicSeconds() + 10
        while access(socketPath, F_OK) != 0 {
            guard monotonicSeconds() < deadline else { throw BenchError("the Node.js server did not listen on \(socketPath) within 10 s (see \(directory)/node.log)") }
            usleep(10_000)
        }
    }

    func stop() { child.stop() }
}

extension Child {
    /// Context switches (voluntary and involuntary) of all the process's threads so far.
    var contextSwitches: Double {
        guard let tasks = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task") else { return .nan }
        var total = 0.0
        for task in tasks {
            guard let status = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/status", encoding: .utf8) else { continue }
            for line in status.split(separator: "\n") {
                if line.hasPrefix("voluntary_ctxt_switches:") || line.hasPrefix("nonvoluntary_ctxt_switches:") {
                    total += Double(line.split(separator: "\t").last?.trimmingCharacters(in: .whitespaces) ?? "") ?? 0
                }
            }
        }
        return total
    }
}

/// System calls per call of a server (all its threads), counted by `strace -c -f` attached
/// while one client makes `calls` sequential calls. strace slows the server down, so this run's
/// time is not reported: only the count, which it does not change.
func syscallsPerCall(server: Child, path: String, wire: Wire, calls: Int, directory: String) throws -> Double {
    guard let strace = which("strace") else { return .nan }
    let output = "\(directory)/strace-\(server.name)-\(server.pid).txt"
    let tracer = try Child(strace, ["-c", "-f", "-q", "-o", output, "-p", "\(server.pid)"], name: "strace", log: "/dev/null")
    // strace attaches to every thread before it counts; give it the time to.
    usleep(500_000)
    _ = try runLoad(path: path, wire: wire, clients: 1, callsPerClient: calls, warmup: 0)
    kill(tracer.pid, SIGINT)
    var status: Int32 = 0
    waitpid(tracer.pid, &status, 0)
    guard let text = try? String(contentsOfFile: output, encoding: .utf8),
        let total = text.split(separator: "\n").last(where: { $0.hasSuffix("total") })
    else { return .nan }
    // "100.00    0.123456           5     42000       123 total": calls is the 4th column.
    let fields = total.split(separator: " ", omittingEmptySubsequences: true)
    guard fields.count >= 5, let count = Double(fields[3]) else { return .nan }
    return count / Double(calls)
}
