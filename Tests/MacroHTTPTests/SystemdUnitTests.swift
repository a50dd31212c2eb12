import Foundation
import MacroEngineCore
import MacroTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `config/macrod.service` had `PrivateNetwork=yes` while the config `make
/// install-user` installs turns the dashboard on (`http: "127.0.0.1:0"`): macrod listened in a
/// network namespace of its own, and the URL `macro dashboard` printed reached nothing (nor could
/// Prometheus scrape it). This installs the unit and the config as `make install-user` does (into
/// a temporary HOME), has `systemd-analyze --user verify` check the unit, then runs its
/// `ExecStart` as systemd would, inside the sandbox its directives ask for, and uses the
/// dashboard and the socket from outside it.
@Suite("The shipped systemd unit", .serialized)
struct SystemdUnitTests {
    /// `[Service]` directives that start, stop and supervise: nothing to reproduce here.
    static let supervision: Set<String> = [
        "Type", "NotifyAccess", "WatchdogSec", "ExecStart", "ExecReload", "KillSignal", "TimeoutStopSec", "Restart", "RestartSec",
    ]

    /// The unit's `[Service]` directives, in order.
    static func serviceDirectives(_ text: String) -> [(key: String, value: String)] {
        var section = ""
        var result: [(String, String)] = []
        for raw in text.split(separator: "\n") {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            if line.hasPrefix("[") { section = line; continue }
            guard section == "[Service]", let equals = line.firstIndex(of: "=") else { continue }
            result.append((String(line[..<equals]), String(line[line.index(after: equals)...])))
        }
        return result
    }

    /// The command systemd would run for the unit, `%h` as `home`, inside what its sandboxing
    /// directives ask for. A directive the test cannot reproduce fails the test.
    static func sandboxedCommand(_ directives: [(key: String, value: String)], home: String) throws -> [String] {
        var prefix: [String] = []
        var command: [String] = []
        for (key, value) in directives {
            switch (key, value) {
            case ("ExecStart", _):
                command = value.replacingOccurrences(of: "%h", with: home).split(separator: " ").map(String.init)
            case ("PrivateNetwork", "yes"):
                // A network namespace with only the loopback interface, up, as systemd makes it.
                prefix +=
                    ["unshare", "--net"] + (getuid() == 0 ? [] : ["--map-root-user"])
                    + ["--", "/bin/sh", "-c", "ip link set lo up && exec \"$@\"", "sh"]
            case ("NoNewPrivileges", "yes"):
                prefix += ["setpriv", "--no-new-privs"]
            case ("RestrictAddressFamilies", _):
                prefix +=
                    ["python3", repositoryRoot + "/Tests/Sandbox/restrict_address_families.py"]
                    + value.split(separator: " ").map(String.init) + ["--"]
            case _ where supervision.contains(key):
                continue
            default:
                throw UnitError(description: "config/macrod.service has \(key)=\(value), which SystemdUnitTests cannot reproduce yet: teach it")
            }
        }
        return prefix + command
    }

    struct UnitError: Error, CustomStringConvertible { var description: String }

    @Test func theUnitsSandboxServesTheDashboardOfTheConfigItShipsWith() throws {
        let home = TemporaryDirectory(prefix: "macro-home")
        let install = try BinaryRunner.run("/usr/bin/make", ["-s", "-C", repositoryRoot, "install-user-files", "BIN=\(BinaryRunner.binDirectory)", "HOME=\(home.path)"])
        try #require(install.status == 0, "\(install)")
        let runtime = home.url("run")
        try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let unitPath = home.url(".config/systemd/user/macrod.service")
        let environment = ["HOME": home.path, "XDG_RUNTIME_DIR": runtime, "XDG_CONFIG_HOME": home.url(".config"), "MACROENGINE_SOCKET": ""]

        // systemd's own check of the unit (its keys, its ExecStart).
        let verify = try BinaryRunner.run("/usr/bin/systemd-analyze", ["--user", "verify", "--man=no", unitPath], environment: environment)
        #expect(verify.status == 0, "\(verify)")
        #expect(verify.stderr == "", "\(verify)")

        // The unit's command, in its sandbox, with what the user manager gives a service.
        let command = try Self.sandboxedCommand(Self.serviceDirectives(try String(contentsOfFile: unitPath, encoding: .utf8)), home: home.path)
        let notify = try NotifySocket(path: home.url("notify.sock"))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = command
        var env = ["PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin", "NOTIFY_SOCKET": notify.path]
        for (key, value) in environment where !value.isEmpty { env[key] = value }
        process.environment = env
        let log = home.url("macrod.log")
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        process.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
        process.standardInput = FileHandle(forReadingAtPath: "/dev/null")
        let exit = try ChildExit.start(process)
        defer {
            kill(process.processIdentifier, SIGTERM)
            exit.wait()
        }
        let daemonLog = { (try? String(contentsOfFile: log, encoding: .utf8)) ?? "" }
        let ready = notify.next()
        try #require(ready?.hasPrefix("READY=1\n") == true, "no READY=1 from macrod in the unit's sandbox (\(command.joined(separator: " "))):\n\(daemonLog())")
        // The sandbox is on macrod itself (every step of the command execs: the same pid).
        let status = try String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8)
        #expect(status.hasPrefix("Name:\tmacrod\n"), "\(status)")
        #expect(status.contains("\nNoNewPrivs:\t1\n"))
        #expect(status.contains("\nSeccomp:\t2\n"))

        // As the user, outside the sandbox: the URL `macro dashboard` prints answers.
        let dashboard = try BinaryRunner.run(home.url(".local/bin/macro"), ["dashboard", "--no-open"], environment: environment)
        try #require(dashboard.status == 0, "\(dashboard)")
        let url = dashboard.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let port = try #require(url.split(separator: ":").last.flatMap { Int($0.prefix { $0.isNumber }) }, "\(url)")
        let code = url.components(separatedBy: "code=").last ?? ""
        let reply: HTTPReply
        do {
            // As the page does: the one-time code for the token, then the token as a bearer.
            let session = try HTTPProbe.request(port: port, "POST", "/session", body: #"{"code":"\#(code)"}"#)
            try #require(session.status == 200, "\(session)")
            let token = try #require(try MacroValue(jsonText: session.body)["token"].stringValue, "\(session)")
            reply = try HTTPProbe.request(port: port, "GET", "/config.json", headers: [("Authorization", "Bearer \(token)")])
        } catch {
            Issue.record("the dashboard \(url) that `macro dashboard` printed cannot be reached from outside the unit's sandbox: \(error)")
            return
        }
        #expect(reply.status == 200, "\(reply)")
        #expect(try MacroValue(jsonText: reply.body)["channels"].arrayValue?.compactMap { $0["name"].stringValue } == ["inner", "middle", "outer"])
        // And the socket: a macro of the installed directory runs.
        let run = try BinaryRunner.run(home.url(".local/bin/macro"), ["run", "bump", "outer", "2", "--json"], environment: environment)
        #expect(run.status == 0, "\(run)")
        #expect(try MacroValue(jsonText: run.stdout)["result"] == 2)
    }
}
