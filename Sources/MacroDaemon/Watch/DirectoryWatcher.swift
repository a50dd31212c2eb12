import Foundation
import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Watches the macros directory with inotify on a thread of its own and reports:
/// `.file(name)` when a file was written, renamed in or out, created or deleted, and `.rescan`
/// when the directory itself was deleted, moved, created or replaced (its parent is watched too).
final class DirectoryWatcher: Sendable {
    enum Event: Sendable, Hashable {
        case file(String)
        case lib
        /// A file of `resources/` changed (its name).
        case resource(String)
        case rescan
    }

    let directory: String
    private let logger: Logger
    private let onEvent: @Sendable (Event) -> Void
    private let fd: Int32
    private let stopping = Atomic<Bool>(false)
    private let watches = Mutex<(directory: Int32, parent: Int32, lib: Int32, resources: Int32)>((-1, -1, -1, -1))
    private let finished = Mutex<Bool>(false)

    private static let fileMask = UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_CREATE | IN_DELETE_SELF | IN_MOVE_SELF)
    private static let parentMask = UInt32(IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_ONLYDIR)

    init(directory: String, logger: Logger, onEvent: @escaping @Sendable (Event) -> Void) throws {
        self.directory = URL(fileURLWithPath: directory).standardizedFileURL.path
        self.logger = logger
        self.onEvent = onEvent
        fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard fd >= 0 else { throw MacroDaemonError(code: .watch, message: "inotify_init1 failed: \(String(cString: strerror(errno)))") }
        let parent = (self.directory as NSString).deletingLastPathComponent
        let parentWatch = inotify_add_watch(fd, parent, Self.parentMask)
        if parentWatch < 0 { logger.warning("cannot watch \(parent) for the macros directory being replaced: \(String(cString: strerror(errno)))") }
        watches.locked { $0.parent = parentWatch }
        rewatchDirectory()
    }

    /// (Re)adds the watch on the directory; false when it does not exist.
    @discardableResult
    func rewatchDirectory() -> Bool {
        let wd = inotify_add_watch(fd, directory, Self.fileMask | UInt32(IN_ONLYDIR))
        let lib = inotify_add_watch(fd, directory + "/lib", Self.fileMask | UInt32(IN_ONLYDIR))
        let resources = inotify_add_watch(fd, directory + "/resources", Self.fileMask | UInt32(IN_ONLYDIR))
        watches.locked {
            $0.directory = wd; $0.lib = lib; $0.resources = resources
        }
        return wd >= 0
    }

    /// Starts the reading thread.
    func start() {
        let thread = Thread { [self] in
            self.loop()
            self.finished.locked { $0 = true }
        }
        thread.name = "macrod-inotify"
        thread.start()
    }

    /// Stops the thread (within ~100 ms) and closes the descriptor.
    func stop() {
        stopping.store(true, ordering: .relaxed)
    }

    private func loop() {
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        let base = (directory as NSString).lastPathComponent
        while !stopping.load(ordering: .relaxed) {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&pfd, 1, 100)
            if ready <= 0 { continue }
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n <= 0 { continue }
            var offset = 0
            var events: [Event] = []
            let (dirWatch, parentWatch, libWatch, resourcesWatch) = watches.locked { ($0.directory, $0.parent, $0.lib, $0.resources) }
            while offset + 16 <= n {
                let wd = buffer.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset, as: Int32.self) }
                let mask = buffer.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self) }
                let length = Int(buffer.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self) })
                let nameBytes = buffer[(offset + 16)..<min(n, offset + 16 + length)].prefix { $0 != 0 }
                let name = String(decoding: nameBytes, as: UTF8.self)
                offset += 16 + length
                if wd == parentWatch {
                    if name == base { events.append(.rescan) }
                } else if wd == libWatch, libWatch >= 0 {
                    if mask & UInt32(IN_ISDIR) == 0 { events.append(.lib) }
                } else if wd == resourcesWatch, resourcesWatch >= 0 {
                    if mask & UInt32(IN_ISDIR) == 0, !name.isEmpty { events.append(.resource(name)) }
                } else if wd == dirWatch {
                    if mask & UInt32(IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED) != 0 {
                        events.append(.rescan)
                    } else if mask & UInt32(IN_ISDIR) != 0 {
                        if name == "lib" || name == "resources" { events.append(.rescan) }
                    } else if !name.isEmpty {
                        events.append(.file(name))
                    }
                } else if mask & UInt32(IN_IGNORED) == 0 {
                    events.append(.rescan)
                }
            }
            var seen = Set<String>()
            for event in events {
                let key: String
                switch event {
                case .file(let name): key = name
                case .lib: key = "\u{0}lib"
                case .resource(let name): key = "\u{0}resource/" + name
                case .rescan: key = "\u{0}rescan"
                }
                if seen.insert(key).inserted { onEvent(event) }
            }
        }
        close(fd)
    }
}
