import Foundation
import MacroBase
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Children started with posix_spawn: their streams, environment, directory, exit and what they
/// inherit.
@Suite("Child processes")
struct ChildProcessTests {
    private static func shell(_ script: String) -> ChildProcess {
        let child = ChildProcess()
        child.executableURL = URL(fileURLWithPath: "/bin/sh")
        child.arguments = ["-c", script]
        return child
    }

    @Test func pipesEnvironmentDirectoryAndExitStatus() throws {
        let child = Self.shell(#"read line; echo "$line from $GREETING in $(pwd)"; echo oops >&2; exit 3"#)
        child.environment = ["GREETING": "hello", "PATH": "/usr/bin:/bin"]
        child.currentDirectoryURL = URL(fileURLWithPath: "/tmp")
        let input = Pipe(), output = Pipe(), errors = Pipe()
        child.standardInput = input
        child.standardOutput = output
        child.standardError = errors
        try child.run()
        input.fileHandleForWriting.write(Data("ping\n".utf8))
        try input.fileHandleForWriting.close()
        // The child's ends are closed in this process: the reads end when the child exits.
        #expect(String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self) == "ping from hello in /tmp\n")
        #expect(String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self) == "oops\n")
        #expect(child.wait() == .exit(3))
        #expect(child.poll() == .exit(3))
        #expect(!child.isRunning)
    }

    @Test func aSignalEndsItAndItsStatusSaysSo() throws {
        let child = Self.shell("exec sleep 60")
        child.standardOutput = nil
        try child.run()
        #expect(child.isRunning)
        #expect(child.wait(timeout: .milliseconds(20)) == nil)
        child.signal(SIGKILL)
        #expect(child.wait() == .signal(SIGKILL))
        #expect(child.wait().status == 128 + SIGKILL)
    }

    /// Only the three standard streams reach the child, whatever this process has open, and a
    /// nil stream is /dev/null.
    @Test func theChildInheritsOnlyItsThreeStreams() throws {
        let held = open("/dev/null", O_RDONLY)  // no O_CLOEXEC: posix_spawn alone would pass it on
        defer { close(held) }
        #expect(held > 2)
        let child = Self.shell("for fd in /proc/$$/fd/*; do readlink $fd || true; done")
        let output = Pipe()
        child.standardOutput = output
        child.standardInput = nil
        child.standardError = nil
        try child.run()
        let links = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).split(separator: "\n")
        #expect(child.wait() == .exit(0))
        // 0 and 2 are /dev/null, 1 the pipe (the directory the glob read is closed by then).
        #expect(links.count == 3, "\(links)")
        #expect(links.first == "/dev/null")
        #expect(links.dropFirst().first?.hasPrefix("pipe:") == true)
        #expect(links.dropFirst(2).first == "/dev/null")
    }

    @Test func aProgramThatCannotRunIsAnErrorNamingIt() throws {
        let child = ChildProcess()
        child.executableURL = URL(fileURLWithPath: "/nonexistent/program")
        let error = try #require(throws: ChildProcess.SpawnError.self) { try child.run() }
        #expect(error.description == "cannot run /nonexistent/program: No such file or directory")
        #expect(child.processIdentifier == 0)
        #expect(child.poll() == nil)
    }
}
