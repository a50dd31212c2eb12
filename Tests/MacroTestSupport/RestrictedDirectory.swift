import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A directory that cannot be written, or a small file system that fills up, for tests of what
/// happens to the state there. Root passes every permission check, so as root a read-only
/// bind mount (or a tmpfs) is used; otherwise mode 0555. Undone when the value is released.
public final class RestrictedDirectory: @unchecked Sendable {
    // @unchecked: used by one test at a time; nothing in it changes after init.
    /// The directory.
    public let path: String
    private let mounted: Bool

    private init(path: String, mounted: Bool) {
        self.path = path
        self.mounted = mounted
    }

    /// `path` (an existing directory) made read-only; nil when that cannot be done here (root
    /// without the right to mount, e.g. in a container).
    public static func readOnly(_ path: String) -> RestrictedDirectory? {
        guard getuid() == 0 else {
            chmod(path, 0o555)
            return RestrictedDirectory(path: path, mounted: false)
        }
        guard (try? BinaryRunner.run("/bin/mount", ["--bind", path, path]))?.status == 0 else { return nil }
        let directory = RestrictedDirectory(path: path, mounted: true)
        guard (try? BinaryRunner.run("/bin/mount", ["-o", "remount,ro,bind", path, path]))?.status == 0 else { return nil }
        return directory
    }

    /// A tmpfs of `kibibytes` mounted on `path` (an existing, empty directory); nil when this
    /// process may not mount (not root, or a container without the right).
    public static func tmpfs(_ path: String, kibibytes: Int) -> RestrictedDirectory? {
        guard getuid() == 0,
            (try? BinaryRunner.run("/bin/mount", ["-t", "tmpfs", "-o", "size=\(kibibytes)k,mode=0700", "tmpfs", path]))?.status == 0
        else {
            return nil
        }
        return RestrictedDirectory(path: path, mounted: true)
    }

    /// Whether ``readOnly(_:)`` can work here.
    public static var readOnlyIsPossible: Bool {
        let probe = TemporaryDirectory(prefix: "readonly-probe")
        return readOnly(probe.path) != nil
    }

    /// Whether ``tmpfs(_:kibibytes:)`` can work here.
    public static var tmpfsIsPossible: Bool {
        let probe = TemporaryDirectory(prefix: "tmpfs-probe")
        return tmpfs(probe.path, kibibytes: 64) != nil
    }

    deinit {
        if mounted {
            umount2(path, Int32(MNT_DETACH))
        } else {
            chmod(path, 0o700)
        }
    }
}
