import Foundation

/// What a finished process left behind.
public struct ProcessResult: Sendable, CustomStringConvertible {
    /// The exit status (or 128 + signal).
    public var status: Int32
    /// Everything written to stdout.
    public var stdout: String
    /// Everything written to stderr.
    public var stderr: String
    /// Wall-clock time from launch to exit.
    public var elapsed: Duration

    /// For test failure messages.
    public var description: String { "exit \(status)\n--- stdout\n\(stdout)--- stderr\n\(stderr)" }
    /// stderr split into lines.
    public var stderrLines: [String] { stderr.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) }
}

/// Runs the package's built executables (`macro`, later `macrod`) as a user would.
public enum BinaryRunner {
    /// The directory holding the built products: `$MACROENGINE_BIN_DIR`, else the directory of
    /// the running test bundle (SwiftPM puts both in the same place).
    public static var binDirectory: String {
        if let dir = ProcessInfo.processInfo.environment["MACROENGINE_BIN_DIR"], !dir.isEmpty { return dir }
        var url = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        while url.path != "/" {
            url.deleteLastPathComponent()
            if FileManager.default.isExecutableFile(atPath: url.appendingPathComponent("macro").path) { return url.path }
        }
        fatalError("cannot find the built `macro` binary next to \(CommandLine.arguments[0]); set MACROENGINE_BIN_DIR")
    }

    /// Runs `binary` with `arguments`, stdin from /dev/null (or `input`), and waits for it.
    public static func run(
        _ binary: String, _ arguments: [String], environment: [String: String] = [:],
        input: String? = nil, currentDirectory: String? = nil
    ) throws -> ProcessResult {
        let scratch = TemporaryDirectory(prefix: "macroengine-run")
        let outPath = scratch.url("stdout"), errPath = scratch.url("stderr")
        _ = FileManager.default.createFile(atPath: outPath, contents: nil)
        _ = FileManager.default.createFile(atPath: errPath, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary.hasPrefix("/") ? binary : "\(binDirectory)/\(binary)")
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        env["MACROENGINE_CONFIG"] = nil
        // SwiftNIO crashes, instead of printing an error, on a task scheduled on a loop that shut down.
        env["SWIFTNIO_STRICT"] = "1"
        env["XDG_STATE_HOME"] = scratch.path
        // Nor reads the user's ~/.config/macroengine/macroengine.yaml.
        env["XDG_CONFIG_HOME"] = scratch.url("config")
        // No test talks to a daemon it did not start.
        env["MACROENGINE_SOCKET"] = scratch.url("no-daemon.sock")
        for (key, value) in environment { env[key] = value }
        process.environment = env
        if let currentDirectory { process.currentDirectoryURL = URL(fileURLWithPath: currentDirectory) }
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: outPath))
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: errPath))
        if let input {
            let inPath = try scratch.write("stdin", input)
            process.standardInput = try FileHandle(forReadingFrom: URL(fileURLWithPath: inPath))
        } else {
            process.standardInput = FileHandle(forReadingAtPath: "/dev/null")
        }
        let clock = ContinuousClock()
        let start = clock.now
        let status = try ChildExit.start(process).wait()
        let elapsed = clock.now - start
        return ProcessResult(
            status: status,
            stdout: (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? "",
            stderr: (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? "",
            elapsed: elapsed)
    }

    /// Runs the `macro` CLI.
    public static func macro(_ arguments: String..., environment: [String: String] = [:], currentDirectory: String? = nil) throws -> ProcessResult {
        try run("macro", arguments, environment: environment, currentDirectory: currentDirectory)
    }

    /// Runs the `macro` CLI with an argument array.
    public static func macro(arguments: [String], environment: [String: String] = [:], currentDirectory: String? = nil) throws -> ProcessResult {
        try run("macro", arguments, environment: environment, currentDirectory: currentDirectory)
    }
}
