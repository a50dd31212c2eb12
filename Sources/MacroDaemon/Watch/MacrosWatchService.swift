import Logging
import MacroEngineCore
import NIOCore
import Synchronization

/// The macros directory, live: loads every file at start, then watches the directory
/// (``DirectoryWatcher``) and reloads what changed, debounced on the engine's loop
/// (``WatchDebouncer``): one file, the lib folder, or everything when the directory itself was
/// replaced. SIGHUP rescans through ``rescan()``.
final class MacrosWatchService: DaemonService {
    private let library: MacroLibrary
    private let loop: any EventLoop
    private let debounce: TimeAmount
    private let logger: Logger
    private let watcher = Mutex<DirectoryWatcher?>(nil)

    /// Watches `library`'s directory; each change is handled on `loop` (the engine's), `debounce`
    /// after the first event of a burst.
    init(library: MacroLibrary, loop: any EventLoop, debounce: TimeAmount = .milliseconds(15), logger: Logger) {
        self.library = library
        self.loop = loop
        self.debounce = debounce
        self.logger = logger
    }

    /// Loads every file, then starts watching. Throws ``MacroDaemonError`` (`watch`) when inotify
    /// cannot be set up.
    func start() throws {
        rescan()
        let library = library
        let debouncer = WatchDebouncer(loop: loop, delay: debounce) { [weak self] event in
            switch event {
            case .file(let name): library.refresh(filename: name)
            case .lib: library.refreshLib()
            case .resource(let name): library.resourceChanged(name)
            case .rescan: self?.rescan()
            }
        }
        let watcher = try DirectoryWatcher(directory: library.directory, logger: logger) { debouncer.receive($0) }
        self.watcher.withLock { $0 = watcher }
        watcher.start()
    }

    /// Stops the watcher's thread.
    func stop() { watcher.withLock { $0?.stop() } }

    /// Full rescan: re-watch the directory (it may be new) and reload every file. On the engine's
    /// loop, or before the engine serves.
    func rescan() {
        watcher.withLock { $0 }?.rewatchDirectory()
        do {
            let entries = try library.reload()
            logger.info("loaded \(entries.filter { $0.status == .ok }.count) macro(s) from \(library.directory), \(entries.filter { $0.status == .error }.count) broken")
        } catch {
            logger.warning("\(error); serving no macros until the directory exists")
            library.removeAll()
        }
    }
}
