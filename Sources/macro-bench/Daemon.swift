import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A private macrod on a temporary socket, with a macros directory holding the benchmark's macro
/// and the default durability (`fsync: interval`).
final class Macrod {
    /// The benchmark macro: read a ring, add the argument, write it back (wrapping at 10, so every
    /// call changes the model and is persisted, like the Redis function's HSET).
    static let addMacro = """
        function (amount) {
            let v = progress.inner + amount;
            if (v > 10) v -= 10;
            progress.inner = v;
            return v;
        }
        """

    let socketPath: String
    let macrosDirectory: String
    let statePath: String
    let configPath: String
    /// The config's lines before any extra ones.
    private let baseConfig: String
    let child: Child

    init(binaries: String, directory: String, extraConfig: String = "") throws {
        macrosDirectory = "\(directory)/macros"
        socketPath = "\(directory)/run/macrod.sock"
        statePath = "\(directory)/state.json"
        configPath = "\(directory)/macroengine.yaml"
        try FileManager.default.createDirectory(atPath: macrosDirectory, withIntermediateDirectories: true)
        try Self.addMacro.write(toFile: "\(macrosDirectory)/add.js", atomically: true, encoding: .utf8)
        baseConfig = """
            macros_dir: \(macrosDirectory)
            state_file: \(statePath)
            log_level: warning
            """
        try (baseConfig + "\n" + extraConfig).write(toFile: configPath, atomically: true, encoding: .utf8)
        child = try Child(
            "\(binaries)/macrod", ["--config", "\(directory)/macroengine.yaml", "--socket", socketPath],
            name: "macrod", log: "\(directory)/macrod.log")
        // Wait until it answers.
        let socket = try BlockingSocket(path: socketPath)
        try socket.send(Array("{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"macro.list\"}\n".utf8))
        try socket.receive(BlockingSocket.line)
    }

    /// One `macro.call` line; the same bytes every time (one request in flight per connection).
    static func call(_ name: String, _ arguments: String) -> [UInt8] {
        Array("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"macro.call\",\"params\":{\"name\":\"\(name)\",\"args\":[\(arguments)]}}\n".utf8)
    }

    static func validate(_ reply: [UInt8]) -> String? {
        let text = String(decoding: reply, as: UTF8.self)
        return text.contains("\"result\"") ? nil : "macrod answered an error: \(text)"
    }

    /// One request on a connection of its own: its reply line.
    func request(_ line: String) throws -> String {
        let socket = try BlockingSocket(path: socketPath)
        try socket.send(Array((line + "\n").utf8))
        return String(decoding: try socket.receive(BlockingSocket.line), as: UTF8.self)
    }

    /// Rewrites the config with `extraConfig` after the benchmark's lines and has macrod re-read
    /// it (SIGHUP); returns once `applied` (asked again after each SIGHUP's reload could have run)
    /// says it has taken effect, or throws after 10 s.
    func reload(extraConfig: String, until applied: () throws -> Bool) throws {
        try (baseConfig + "\n" + extraConfig).write(toFile: configPath, atomically: true, encoding: .utf8)
        kill(child.pid, SIGHUP)
        let deadline = monotonicSeconds() + 10
        while try !applied() {
            guard monotonicSeconds() < deadline else { throw BenchError("macrod did not apply \(configPath) within 10 s of SIGHUP") }
        }
    }

    func stop() { child.stop() }
}
