import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The floor anchor: the minimal server (`macro-bench minimal-server`, a hidden mode of this
/// executable), doing only macrod's essential work for one `macro.call` — one thread in an epoll
/// loop of its own, the call scanned from the bytes, one JavaScriptCore call of the benchmark
/// macro through two native callbacks, one journal write per loop tick and one reply write per
/// connection per tick. It runs as a child process so its CPU time is read from /proc, as
/// Redis' and Node's are. Not to be confused with `--minimal-jsc`, the smallest JavaScriptCore
/// *process* (evaluate one line and exit) that `macro run --local` and macrod's memory are
/// compared with.
final class MinimalServer {
    let socketPath: String
    let child: Child

    /// Starts the minimal server on `directory/minimal-server.sock`, journaling to
    /// `directory/minimal-server.journal`; returns once it accepts connections.
    init(directory: String) throws {
        socketPath = "\(directory)/minimal-server.sock"
        child = try Child(
            try Self.executable(), ["minimal-server", "--socket", socketPath, "--journal", "\(directory)/minimal-server.journal"],
            name: "minimal-server", log: "\(directory)/minimal-server.log")
        do {
            let probe = try BlockingSocket(path: socketPath)
            try probe.send(Macrod.call("add", "0"))
            if let problem = Macrod.validate(try probe.receive(BlockingSocket.line)) { throw BenchError("minimal server: \(problem)") }
        } catch {
            child.stop()
            throw BenchError("the minimal server did not answer on \(socketPath): \(error) (see \(directory)/minimal-server.log)")
        }
    }

    func stop() { child.stop() }

    /// This executable's path (the server is a mode of it).
    private static func executable() throws -> String {
        guard let path = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") else {
            throw BenchError("cannot find this executable's path (/proc/self/exe) to start the minimal server")
        }
        return path
    }
}
