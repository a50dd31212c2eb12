import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A child process the benchmark started, stopped (SIGTERM, then SIGKILL) when done.
final class Child {
    let pid: pid_t
    let name: String

    init(_ executable: String, _ arguments: [String], name: String, log: String) throws {
        self.name = name
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, log, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        pid = try spawn(executable, arguments, actions: &actions)
    }

    /// Resident memory (VmRSS) in MiB.
    var residentMiB: Double {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
            let kib = Double(line.split(separator: " ", omittingEmptySubsequences: true)[1])
        else { return .nan }
        return kib / 1024
    }

    /// User + system CPU seconds the process has used (from /proc/PID/stat).
    var cpuSeconds: Double {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return .nan }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return .nan }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    func stop() {
        kill(pid, SIGTERM)
        for _ in 0..<300 {
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid { return }
            usleep(10_000)
        }
        kill(pid, SIGKILL)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
    }
}

/// posix_spawn with PATH lookup; throws naming the program when it cannot start.
func spawn(_ executable: String, _ arguments: [String], actions: inout posix_spawn_file_actions_t) throws -> pid_t {
    var pid: pid_t = 0
    let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
    defer { argv.forEach { free($0) } }
    let result = posix_spawnp(&pid, executable, &actions, nil, argv, environ)
    guard result == 0 else { throw BenchError("cannot start \(executable): \(String(cString: strerror(result)))") }
    return pid
}

/// Runs a command to completion with its output discarded: wall seconds, peak RSS (MiB), exit status.
func timeProcess(_ executable: String, _ arguments: [String]) throws -> (seconds: Double, peakMiB: Double, status: Int32) {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
    let start = monotonicSeconds()
    let pid = try spawn(executable, arguments, actions: &actions)
    var status: Int32 = 0
    var usage = rusage()
    wait4(pid, &status, 0, &usage)
    return (monotonicSeconds() - start, Double(usage.ru_maxrss) / 1024, status)
}

/// Finds `name` on PATH.
func which(_ name: String) -> String? {
    for directory in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
        let candidate = "\(directory)/\(name)"
        if access(candidate, X_OK) == 0 { return candidate }
    }
    return nil
}

/// A bare Unix-socket ping-pong server (the physical limit): reads `requestSize` bytes, writes
/// `replySize` bytes, one blocking thread per connection.
final class EchoServer: @unchecked Sendable {
    // @unchecked: the fields are set in init and only read afterwards; the listener fd is
    // closed once, in stop(), after which accept() fails and the thread ends.
    let path: String
    private let listener: Int32

    init(path: String, requestSize: Int, replySize: Int) throws {
        self.path = path
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        self.listener = listener
        let bound = withUnixAddress(path) { bind(listener, $0, $1) }
        guard bound == 0, listen(listener, 256) == 0 else { throw BenchError("echo server: cannot listen on \(path)") }
        let thread = Thread {
            while true {
                let client = accept(listener, nil, nil)
                if client < 0 { return }
                let worker = Thread {
                    var request = [UInt8](repeating: 0, count: requestSize)
                    let reply = [UInt8](repeating: UInt8(ascii: "x"), count: replySize)
                    defer { close(client) }
                    while true {
                        var got = 0
                        while got < requestSize {
                            let n = request.withUnsafeMutableBytes { read(client, $0.baseAddress! + got, requestSize - got) }
                            if n <= 0 { return }
                            got += n
                        }
                        let sent = reply.withUnsafeBytes { write(client, $0.baseAddress!, replySize) }
                        if sent != replySize { return }
                    }
                }
                worker.stackSize = 256 * 1024
                worker.start()
            }
        }
        thread.start()
    }

    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
        unlink(path)
    }
}
