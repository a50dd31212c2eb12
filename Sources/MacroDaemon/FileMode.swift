#if canImport(Glibc)
import Glibc
#endif

/// File permission helpers for files macrod writes on the user's behalf.
enum FileMode {
    /// The permission bits of the file at `path` (following a symlink), nil when there is none.
    static func existing(_ path: String) -> mode_t? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return info.st_mode & 0o7777
    }

    /// The environment variable that carries the user's umask into a re-executed macrod.
    static let umaskVariable = "MACROD_USER_UMASK"

    /// The umask macrod was first started with: `current` (what the process had before macrod
    /// tightened it), unless an earlier macrod of this lineage recorded one in the environment.
    /// Records it there for the next.
    static func userUmask(current: mode_t) -> mode_t {
        if let text = getenv(umaskVariable).map({ String(cString: $0) }), let recorded = mode_t(text, radix: 8), recorded <= 0o777 {
            return recorded
        }
        setenv(umaskVariable, String(current, radix: 8), 1)
        return current
    }

    /// The mode a new file gets under `umask`, as `open(2)` with 0666 would give it.
    static func newFile(umask: mode_t) -> mode_t { 0o666 & ~umask }
}
