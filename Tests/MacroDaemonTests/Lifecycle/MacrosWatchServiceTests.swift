import Foundation
import Logging
import MacroEngineCore
import MacroTestSupport
import NIOCore
import NIOEmbedded
import Synchronization
import Testing

@testable import MacroDaemon

/// The macros directory's watcher alone: the debounce on a test loop's virtual clock, and the
/// service on a real directory with the engine's loop.
@Suite("macrod's macros watcher")
struct MacrosWatchServiceTests {
    /// An editor's save is several inotify events within milliseconds: one handling each.
    @Test func aBurstOfTheSameEventIsHandledOnceAfterTheDelay() async {
        let loop = NIOAsyncTestingEventLoop()
        let handled = Mutex<[DirectoryWatcher.Event]>([])
        let debouncer = WatchDebouncer(loop: loop, delay: .milliseconds(15)) { event in handled.withLock { $0.append(event) } }
        for event in [DirectoryWatcher.Event.file("a.js"), .file("a.js"), .lib, .file("a.js"), .lib] { debouncer.receive(event) }
        await loop.advanceTime(by: .milliseconds(14))
        #expect(handled.withLock { $0 }.isEmpty)
        await loop.advanceTime(by: .milliseconds(1))
        #expect(Set(handled.withLock { $0 }) == [.file("a.js"), .lib])
        #expect(handled.withLock { $0 }.count == 2)
        // Once handled, the same event is new again.
        debouncer.receive(.file("a.js"))
        await loop.advanceTime(by: .milliseconds(15))
        #expect(handled.withLock { $0 }.count == 3)
        await loop.shutdownGracefully()
    }

    /// Loads the directory at start; a file saved later goes live through inotify and the
    /// debounce, on the engine's loop.
    // The limit catches a hang, not slowness: in the whole suite, on two cores, the synchronous
    // tests that wait on a daemon can hold both threads of Swift's cooperative pool for minutes,
    // and this test (and the limit's own check) then waits its turn: it once "failed" its one
    // minute after 222 s of waiting to run.
    @Test(.timeLimit(.minutes(10))) func itLoadsAtStartAndReloadsWhatIsSaved() async throws {
        let directory = TemporaryDirectory(prefix: "watch")
        _ = try directory.write("macros/one.js", "function one() { return 1 }")
        let config = MacroConfig(macrosDirectory: directory.url("macros"), stateFile: directory.url("state.json"))
        let logger = Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }
        let environment = try EngineEnvironment(config: config, name: "watch-test", logger: logger)
        let library = environment.library
        let watch = MacrosWatchService(library: library, loop: environment.engine.eventLoop, logger: logger)
        try watch.start()
        #expect(library.entry(named: "one")?.status == .ok)

        let loaded = StartGate()
        library.onChange { change in
            if case .loaded(name: "two", _, _) = change { loaded.open() }
        }
        _ = try directory.write("macros/two.js", "function two() { return 2 }")
        #expect(await loaded.wait())
        #expect(library.entry(named: "two")?.status == .ok)
        library.onChange(nil)
        watch.stop()
    }
}
