import Foundation
import MacroBase

#if canImport(Glibc)
import Glibc
#endif

/// Reads and checks the history's own files without following symlinks: a link planted where an
/// object, the index or the audit log should be is refused, never read through or written through.
enum PlainFile {
    /// What `path` is, not following a symlink.
    enum Kind: Equatable {
        case missing, regular, directory, other
    }

    /// What `path` is (`lstat`).
    static func kind(_ path: String) -> Kind {
        var info = stat()
        guard lstat(path, &info) == 0 else { return .missing }
        switch info.st_mode & S_IFMT {
        case S_IFREG: return .regular
        case S_IFDIR: return .directory
        default: return .other
        }
    }

    /// The bytes of the regular file `path`, opened with `O_NOFOLLOW`; at most `limit` bytes.
    static func read(_ path: String, limit: Int = 64 << 20) throws(HistoryError) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { throw HistoryError(.io, "cannot read \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { throw HistoryError(.io, "cannot read \(path): not a regular file") }
        guard Int(info.st_size) <= limit else { throw HistoryError(.io, "cannot read \(path): larger than \(limit) bytes") }
        var bytes = [UInt8](repeating: 0, count: Int(info.st_size))
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + offset, $0.count - offset) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { break }
            offset += n
        }
        return Array(bytes[..<offset])
    }

    /// The last `count` bytes of the regular file `path` (opened with `O_NOFOLLOW`), and whether
    /// they are the whole file.
    static func readTail(_ path: String, bytes count: Int) throws(HistoryError) -> (bytes: [UInt8], whole: Bool) {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { throw HistoryError(.io, "cannot read \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { throw HistoryError(.io, "cannot read \(path): not a regular file") }
        let start = max(0, Int(info.st_size) - count)
        var bytes = [UInt8](repeating: 0, count: Int(info.st_size) - start)
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + offset, $0.count - offset, off_t(start + offset)) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { break }
            offset += n
        }
        return (Array(bytes[..<offset]), start == 0)
    }

    /// The directory `path`, created (mode 0700) when missing; throws when something else is
    /// there (a symlink, a file).
    static func directory(_ path: String) throws(HistoryError) {
        switch kind(path) {
        case .directory: return
        case .missing:
            do { try AtomicFile.createDirectory(path) } catch { throw HistoryError(.io, "\(error)") }
            guard kind(path) == .directory else { throw HistoryError(.io, "cannot create the directory \(path)") }
        case .regular, .other:
            throw HistoryError(.io, "\(path) is not a directory (a symlink or a file is not followed)")
        }
    }

    /// Moves `path` aside as `PATH.corrupt-DATE` (kept, never deleted); returns the new path.
    static func moveAside(_ path: String) -> String? {
        let stamp = Int(Date().timeIntervalSince1970)
        let target = "\(path).corrupt-\(stamp)"
        return rename(path, target) == 0 ? target : nil
    }
}
