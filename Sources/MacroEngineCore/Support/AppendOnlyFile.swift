import Foundation
import MacroBase

#if canImport(Glibc)
import Glibc
#endif

/// An open journal file that lines are appended to, with the checks both journals need (the
/// progress values' ``StateJournal`` and the stores' ``StoreJournal``): opened without following a
/// symbolic link and only when a regular file; a write that is short (a full disk) is taken back;
/// a file removed or moved aside under it is noticed (at most every `removalCheck` nanoseconds,
/// no system call in between) and a new one started. A value kept under its owner's lock.
struct AppendOnlyFile {
    /// The journal's path.
    let path: String
    /// What the file is, for messages ("state journal").
    let what: String
    /// Nanoseconds between two removal checks (0: every append).
    let removalCheck: UInt64
    private(set) var fd: Int32 = -1
    /// Its size in bytes.
    private(set) var size = 0
    private var unsynced = false
    private var checkedAt: UInt64 = 0
    private var device: UInt64 = 0
    private var inode: UInt64 = 0

    init(path: String, what: String, removalCheck: UInt64) {
        self.path = path
        self.what = what
        self.removalCheck = removalCheck
    }

    /// Whether the file is open.
    var isOpen: Bool { fd >= 0 }

    /// Opens the file unless it is open and still the one at ``path`` (checked at most every
    /// ``removalCheck``: reading the monotonic clock is no system call).
    mutating func prepare() throws {
        let now = DispatchTime.now().uptimeNanoseconds
        if fd >= 0, now &- checkedAt >= removalCheck {
            checkedAt = now
            var info = stat()
            if lstat(path, &info) != 0 || UInt64(info.st_dev) != device || UInt64(info.st_ino) != inode { close() }
        }
        if fd < 0 { try open() }
    }

    /// Appends `line` (opened by ``prepare()``); `durable` adds an `fdatasync`. After a failure
    /// the file is as it was.
    mutating func append(_ line: UnsafeRawBufferPointer, durable: Bool) throws {
        let written = Glibc.write(fd, line.baseAddress!, line.count)
        guard written == line.count else {
            // A short write sets no errno ("Success"): it is a full disk (or a quota).
            let error =
                written < 0
                ? AtomicFile.failure("cannot append to", path)
                : MacroError(code: .io, message: "short write to \(path) (\(written) of \(line.count) bytes; disk full?)", file: path)
            _ = ftruncate(fd, off_t(size))
            throw error
        }
        size += written
        if durable {
            guard fdatasync(fd) == 0 else { throw AtomicFile.failure("cannot fsync", path) }
        } else {
            unsynced = true
        }
    }

    /// Empties the file (its content was folded into a snapshot).
    mutating func truncate() throws {
        guard ftruncate(fd, 0) == 0 else { throw AtomicFile.failure("cannot truncate", path) }
        size = 0
        unsynced = false
    }

    /// `fdatasync`s the file when something was appended since the last sync.
    mutating func sync() throws {
        guard unsynced, fd >= 0 else { return }
        unsynced = false
        guard fdatasync(fd) == 0 else { throw AtomicFile.failure("cannot fsync", path) }
    }

    /// Closes the file (the next ``prepare()`` opens it again).
    mutating func close() {
        if fd >= 0 { Glibc.close(fd) }
        self = AppendOnlyFile(path: path, what: what, removalCheck: removalCheck)
    }

    /// Opens (creating) the file: never through a symbolic link (`O_NOFOLLOW`), and only a
    /// regular file (a FIFO or a device is refused by name).
    private mutating func open() throws {
        let directory = (path as NSString).deletingLastPathComponent
        try AtomicFile.createDirectory(directory.isEmpty ? "." : directory)
        // O_NONBLOCK: a FIFO put in its place must not block the open; cleared below.
        let fd = Glibc.open(path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0o600)
        guard fd >= 0 else {
            if errno == ELOOP {
                throw MacroError(code: .io, message: "cannot open \(what) \(path): it is a symbolic link, which is not followed (remove it)", file: path)
            }
            throw AtomicFile.failure("cannot open \(what)", path)
        }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            let error = AtomicFile.failure("cannot open \(what)", path)
            Glibc.close(fd)
            throw error
        }
        guard info.st_mode & S_IFMT == S_IFREG else {
            Glibc.close(fd)
            throw MacroError(code: .io, message: "cannot open \(what) \(path): it is \(StateStore.kind(of: info.st_mode)), not a regular file", file: path)
        }
        _ = fcntl(fd, F_SETFL, O_RDWR | O_APPEND)
        self.fd = fd
        size = Int(info.st_size)
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        checkedAt = removalCheck == 0 ? 0 : DispatchTime.now().uptimeNanoseconds
        // A torn last line (no newline) must not swallow the next one.
        var last: UInt8 = 0
        if size > 0, pread(fd, &last, 1, off_t(size - 1)) == 1, last != UInt8(ascii: "\n") {
            _ = Glibc.write(fd, "\n", 1)
            size += 1
        }
    }
}
