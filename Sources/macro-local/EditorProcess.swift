import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Runs the user's editor on a file the way `git commit` or `crontab -e` do: through `/bin/sh`
/// (so `EDITOR="vim -u NONE"` works), in this process's own process group, so it stays in the
/// terminal's foreground group and may read and draw on the terminal. (Foundation's `Process`
/// puts the child in a new process group, where a terminal editor is stopped by SIGTTOU/SIGTTIN
/// the moment it touches the terminal.) While it runs, SIGINT and SIGQUIT are ignored here, like
/// `system(3)`, so Ctrl-C reaches only the editor; the terminal's modes are restored afterwards.
/// No descriptor of ours reaches it: every one `macro` opens is close-on-exec.
enum EditorProcess {
    /// How the editor ended.
    enum Outcome: Equatable {
        /// Exit status 0.
        case success
        /// A non-zero exit status (127: the shell did not find the editor).
        case failed(status: Int32)
        /// Killed by a signal.
        case signalled(Int32)
    }

    /// Why the editor could not be started.
    struct SpawnError: Error, CustomStringConvertible {
        /// posix_spawn's error number.
        var code: Int32
        var description: String { "cannot start /bin/sh: \(String(cString: strerror(code)))" }
    }

    /// `$VISUAL`, else `$EDITOR`, else `vi`.
    static func command(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        [environment["VISUAL"], environment["EDITOR"]].compactMap { $0 }.first { !$0.trimmingCharacters(in: .whitespaces).isEmpty } ?? "vi"
    }

    /// Runs `editor` on `path` and waits for it.
    static func run(_ editor: String, path: String) throws -> Outcome {
        closeOnExec()
        let saved = TerminalModes.save()
        defer { saved?.restore() }

        var ignore = sigaction()
        ignore.__sigaction_handler.sa_handler = SIG_IGN
        var oldInt = sigaction(), oldQuit = sigaction()
        sigaction(SIGINT, &ignore, &oldInt)
        sigaction(SIGQUIT, &ignore, &oldQuit)
        defer {
            sigaction(SIGINT, &oldInt, nil)
            sigaction(SIGQUIT, &oldQuit, nil)
        }

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // The child starts with default signal handling and nothing blocked, whatever we ignore.
        var defaults = sigset_t()
        sigemptyset(&defaults)
        sigaddset(&defaults, SIGINT)
        sigaddset(&defaults, SIGQUIT)
        sigaddset(&defaults, SIGPIPE)
        sigaddset(&defaults, SIGTSTP)
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setsigmask(&attributes, &empty)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))

        let arguments = ["/bin/sh", "-c", "\(editor) \"$1\"", "sh", path]
        let argv = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, "/bin/sh", nil, &attributes, argv, environ)
        guard spawned == 0 else { throw SpawnError(code: spawned) }

        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { throw SpawnError(code: errno) }
        }
        let signal = status & 0x7f
        if signal != 0 { return .signalled(signal) }
        let code = (status >> 8) & 0xff
        return code == 0 ? .success : .failed(status: code)
    }
}

extension EditorProcess {
    /// Marks every descriptor above stderr close-on-exec: ours (a daemon connection, files the
    /// runtime opened) and any this process inherited, so the editor gets only the terminal.
    static func closeOnExec() {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") else { return }
        for name in names {
            guard let fd = Int32(name), fd > 2 else { continue }
            let flags = fcntl(fd, F_GETFD)
            if flags >= 0 { _ = fcntl(fd, F_SETFD, flags | FD_CLOEXEC) }
        }
    }
}

/// The terminal's modes on stdin, put back after a child that may leave it raw.
struct TerminalModes {
    private let modes: termios

    /// The current modes, or nil when stdin is not a terminal.
    static func save() -> TerminalModes? {
        guard isatty(STDIN_FILENO) == 1 else { return nil }
        var modes = termios()
        guard tcgetattr(STDIN_FILENO, &modes) == 0 else { return nil }
        return TerminalModes(modes: modes)
    }

    /// Restores them.
    func restore() {
        var modes = self.modes
        tcsetattr(STDIN_FILENO, TCSADRAIN, &modes)
    }
}
