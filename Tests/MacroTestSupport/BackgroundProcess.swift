import Foundation
import MacroBase
import MacroRPC

#if canImport(Glibc)
import Glibc
#endif

/// A built binary running in the background (e.g. `macro progress --watch`) whose stdout (or
/// stderr) is read line by line; killed when released. Reads fail after 10 s instead of hanging
/// a test.
public final class BackgroundProcess {
    private let process = ChildProcess()
    private let output: FileHandle
    private var buffer = Data()

    /// Starts `binary` (from the build directory) with `arguments`; ``nextLine()`` reads its
    /// stdout, or its stderr when `readingStandardError`.
    public init(_ binary: String, _ arguments: [String], readingStandardError: Bool = false) throws {
        process.executableURL = URL(fileURLWithPath: "\(BinaryRunner.binDirectory)/\(binary)")
        process.arguments = arguments
        let pipe = Pipe()
        if readingStandardError { process.standardError = pipe } else { process.standardOutput = pipe }
        output = pipe.fileHandleForReading
        try process.run()
    }

    /// The process id (the same after an exec: `macro` becoming `macro-local`).
    public var pid: pid_t { process.processIdentifier }

    deinit {
        // SIGKILL: a child may inherit a blocked SIGTERM from the test runner.
        if process.poll()?.status == nil {
            kill(process.processIdentifier, SIGKILL)
            _ = process.wait().status
        }
    }

    /// Waits (10 s at most) for the process to end and returns its exit status; -1 when it is
    /// still running then.
    public func waitForExit() -> Int32 {
        process.wait(timeout: .seconds(10))?.status ?? -1
    }

    /// The next line of stdout; nil at end of output.
    public func nextLine() throws -> String? {
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if let newline = buffer.firstIndex(of: 10) {
                let line = String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self)
                buffer.removeSubrange(buffer.startIndex...newline)
                return line
            }
            var pfd = pollfd(fd: output.fileDescriptor, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, 100) > 0 else { continue }
            var chunk = [UInt8](repeating: 0, count: 4096)
            let n = chunk.withUnsafeMutableBytes { read(output.fileDescriptor, $0.baseAddress, $0.count) }
            if n <= 0 { return nil }
            buffer.append(contentsOf: chunk[..<n])
        }
        throw RPCError(code: -1, message: "no line from the background process within 10 s")
    }
}
