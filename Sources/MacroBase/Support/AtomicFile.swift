import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes files so that a reader (or a crash) sees either the old content or the new, never half:
/// a temporary file in the same directory, `fsync`, `rename` over the target, `fsync` of the
/// directory. Creates missing parent directories with mode 0700.
public enum AtomicFile {
    /// Writes `data` to `path` atomically. Throws a `.io` ``MacroError`` naming the path and errno.
    /// `durable: false` skips the fsyncs: the rename is still atomic against a crash of the
    /// process, but not against a power loss. `exactMode: true` gives the file `mode` as it is;
    /// otherwise the process's umask applies to it.
    public static func write(_ data: Data, to path: String, mode: mode_t = 0o644, durable: Bool = true, exactMode: Bool = false) throws {
        let directory = (path as NSString).deletingLastPathComponent
        let dir = directory.isEmpty ? "." : directory
        try createDirectory(dir)
        let temporary = "\(dir)/.\((path as NSString).lastPathComponent).tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        guard fd >= 0 else { throw failure("cannot create", temporary) }
        if exactMode, fchmod(fd, mode) != 0 {
            let error = failure("cannot set the mode of", temporary)
            close(fd)
            unlink(temporary)
            throw error
        }
        var ok = false
        defer {
            if !ok { unlink(temporary) }
        }
        do {
            defer { close(fd) }
            try data.withUnsafeBytes { buffer in
                var offset = 0
                while offset < buffer.count {
                    let n = Glibc.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                    if n < 0 {
                        if errno == EINTR { continue }
                        throw failure("cannot write", temporary)
                    }
                    if n == 0 {
                        throw MacroError(code: .io, message: "short write to \(temporary) (\(offset) of \(buffer.count) bytes; disk full?)", file: temporary)
                    }
                    offset += n
                }
            }
            guard !durable || fsync(fd) == 0 else { throw failure("cannot fsync", temporary) }
        }
        guard rename(temporary, path) == 0 else { throw failure("cannot rename into place", path) }
        ok = true
        let dirfd = durable ? open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1
        if dirfd >= 0 {
            fsync(dirfd)
            close(dirfd)
        }
    }

    /// Creates `path` and its parents (mode 0700) when missing. Errors name the directory and
    /// what the system said (`mkdir(2)`'s errno, not a Foundation error number).
    public static func createDirectory(_ path: String) throws {
        var info = stat()
        if stat(path, &info) == 0 {
            guard info.st_mode & S_IFMT == S_IFDIR else {
                throw MacroError(code: .io, message: "\(path) exists and is not a directory", file: path)
            }
            return
        }
        let parent = (path as NSString).deletingLastPathComponent
        if errno == ENOENT, !parent.isEmpty, parent != path, parent != "/" { try createDirectory(parent) }
        guard mkdir(path, 0o700) == 0 || errno == EEXIST else { throw failure("cannot create directory", path) }
    }

    /// A `.io` error: what failed, the path, and what errno says.
    package static func failure(_ what: String, _ path: String) -> MacroError {
        MacroError(code: .io, message: "\(what) \(path): \(String(cString: strerror(errno)))", file: path)
    }
}
