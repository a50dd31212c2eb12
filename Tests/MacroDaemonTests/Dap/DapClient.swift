import Foundation
import MacroBase
import MacroTestSupport
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A DAP client for the tests: runs the real `macro dap` with pipes, frames requests with
/// Content-Length, and reads its messages on a thread into a stream. Used by one test task.
final class DapClient {
    private let process = ChildProcess()
    private let input = Pipe()
    private let output = Pipe()
    private var seq = 0
    private var iterator: AsyncStream<MacroValue>.Iterator
    /// Events read while waiting for something else, oldest first.
    private(set) var events: [MacroValue] = []
    /// Every event ever read, in order.
    private(set) var allEvents: [MacroValue] = []

    init(socket: String) throws {
        process.executableURL = URL(fileURLWithPath: "\(BinaryRunner.binDirectory)/macro")
        process.arguments = ["dap", "--socket", socket]
        var env = ProcessInfo.processInfo.environment
        env["MACROENGINE_CONFIG"] = nil
        env["SWIFTNIO_STRICT"] = "1"
        process.environment = env
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle(forWritingAtPath: "/dev/null")
        let (stream, continuation) = AsyncStream<MacroValue>.makeStream()
        iterator = stream.makeAsyncIterator()
        let handle = output.fileHandleForReading
        let reader = Thread {
            var buffer = Data()
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                buffer.append(chunk)
                while let range = buffer.range(of: Data("\r\n\r\n".utf8)) {
                    let header = String(decoding: buffer[buffer.startIndex..<range.lowerBound], as: UTF8.self)
                    guard let length = Int(header.replacingOccurrences(of: "Content-Length:", with: "").trimmingCharacters(in: .whitespaces)) else { break }
                    guard buffer.count - (range.upperBound - buffer.startIndex) >= length else { break }
                    let body = buffer[range.upperBound..<(range.upperBound + length)]
                    if let message = try? JSONParser.parse(Array(body)) { continuation.yield(message) }
                    buffer = Data(buffer[(range.upperBound + length)...])
                }
            }
            continuation.finish()
        }
        try process.run()
        reader.start()
    }

    deinit {
        process.signal(SIGTERM)
    }

    /// Sends a request and returns its response (success or not); events met meanwhile are kept.
    @discardableResult
    func request(_ command: String, _ arguments: MacroValue = [:]) async throws -> MacroValue {
        seq += 1
        let number = seq
        let body = Array(MacroValue.object(["seq": .number(Double(number)), "type": "request", "command": .string(command), "arguments": arguments]).jsonText(pretty: false).utf8)
        input.fileHandleForWriting.write(Data("Content-Length: \(body.count)\r\n\r\n".utf8) + Data(body))
        while let message = await iterator.next() {
            if message["type"] == "event" { events.append(message); allEvents.append(message); continue }
            if message["type"] == "response", message["request_seq"].intValue == number { return message }
        }
        throw DapClientError(message: "macro dap ended before answering \(command)")
    }

    /// A successful response's body (fails the test otherwise).
    @discardableResult
    func body(_ command: String, _ arguments: MacroValue = [:]) async throws -> MacroValue {
        let response = try await request(command, arguments)
        guard response["success"] == true else { throw DapClientError(message: "\(command) failed: \(response.jsonText())") }
        return response["body"]
    }

    /// The next event named `name` (earlier events of other names are dropped from the queue,
    /// still in ``allEvents``).
    func event(_ name: String) async throws -> MacroValue {
        while !events.isEmpty {
            let event = events.removeFirst()
            if event["event"].stringValue == name { return event["body"] }
        }
        while let message = await iterator.next() {
            guard message["type"] == "event" else { continue }
            allEvents.append(message)
            if message["event"].stringValue == name { return message["body"] }
        }
        throw DapClientError(message: "macro dap ended before the event \(name)")
    }

    /// Kills the adapter (SIGKILL: it says nothing to macrod) and waits for it.
    func kill() {
        process.signal(SIGKILL)
        process.wait()
    }

    /// Waits for the adapter to exit; its status.
    func exitStatus() -> Int32 {
        input.fileHandleForWriting.closeFile()
        return process.wait().status
    }
}

struct DapClientError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}
