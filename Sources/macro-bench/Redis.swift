import Foundation
import MacroBase

#if canImport(Glibc)
import Glibc
#endif

/// A private redis-server on a Unix socket in a temporary directory (no TCP port), with the
/// durability of macrod's default: append-only file, fsync once a second.
final class RedisServer {
    static let luaLibrary = """
        #!lua name=macrobench
        redis.register_function('add', function(keys, args)
          local v = tonumber(redis.call('HGET', keys[1], 'inner') or '0') + tonumber(args[1])
          if v > 10 then v = v - 10 end
          redis.call('HSET', keys[1], 'inner', v)
          return tostring(v)
        end)
        """

    let socketPath: String
    let version: String
    let child: Child

    init(directory: String) throws {
        guard let executable = which("redis-server") else {
            throw BenchError("redis-server is not installed (make bench installs Debian's redis-server; or pass --no-redis)")
        }
        socketPath = "\(directory)/redis.sock"
        version =
            (try? captureOutput(executable, ["--version"]))?
            .split(separator: " ").first(where: { $0.hasPrefix("v=") }).map { String($0.dropFirst(2)) } ?? "?"
        child = try Child(
            executable,
            [
                "--port", "0", "--unixsocket", socketPath, "--unixsocketperm", "700", "--dir", directory,
                "--appendonly", "yes", "--appendfsync", "everysec", "--save", "", "--daemonize", "no",
                "--logfile", "\(directory)/redis.log",
            ], name: "redis-server", log: "\(directory)/redis.out")
        let socket = try BlockingSocket(path: socketPath)
        try socket.send(Self.command(["FUNCTION", "LOAD", "REPLACE", Self.luaLibrary]))
        let reply = try socket.receive(Self.complete)
        guard reply.first == UInt8(ascii: "$") else {
            throw BenchError("redis FUNCTION LOAD failed: \(String(decoding: reply, as: UTF8.self))")
        }
    }

    /// `FCALL add 1 progress AMOUNT` in RESP.
    static func fcall(amount: String) -> [UInt8] { command(["FCALL", "add", "1", "progress", amount]) }

    /// A RESP array of bulk strings.
    static func command(_ parts: [String]) -> [UInt8] {
        var text = "*\(parts.count)\r\n"
        for part in parts { text += "$\(part.utf8.count)\r\n\(part)\r\n" }
        return Array(text.utf8)
    }

    /// The length of one complete RESP reply (simple string, error, integer or bulk string).
    @Sendable static func complete(_ bytes: UnsafeBufferPointer<UInt8>) -> Int? {
        guard let first = bytes.first else { return nil }
        var lineEnd: Int?
        for i in 1..<max(bytes.count, 1) where bytes[i] == UInt8(ascii: "\n") && bytes[i - 1] == UInt8(ascii: "\r") {
            lineEnd = i + 1
            break
        }
        guard let lineEnd else { return nil }
        guard first == UInt8(ascii: "$") else { return lineEnd }
        var length = 0
        var negative = false
        for byte in bytes[1..<(lineEnd - 2)] {
            if byte == UInt8(ascii: "-") { negative = true } else { length = length * 10 + Int(byte - 48) }
        }
        if negative { return lineEnd }
        let total = lineEnd + length + 2
        return bytes.count >= total ? total : nil
    }

    func stop() { child.stop() }
}

/// A command's standard output (for version strings).
func captureOutput(_ executable: String, _ arguments: [String]) throws -> String {
    let process = ChildProcess()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = nil
    try process.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.wait()
    return String(decoding: data, as: UTF8.self)
}
