import Foundation
import MacroBase
import MacroDaemonTesting
import MacroEngineCore
import MacroRPC
import MacroTestSupport
import Synchronization
import Testing

/// macrod's default path in-process (`io_thread: engine`): connections read on the engine's own
/// loop through the socket's pipeline and its busy gate, and the busy control thread that answers
/// control requests while JavaScript holds that loop. Socket pairs, no listener, no process.
@Suite("The engine-loop path in-process")
struct EngineLoopPathTests {
    static let files = [
        "bump.js": "function bump(by) { progress.inner += by; return progress.inner }",
        "spin.js": "function spin() { progress.outer = 9; for (;;) {} }",
    ]

    private static func service() throws -> (InProcessService, TemporaryDirectory) {
        let directory = TemporaryDirectory(prefix: "engine-loop")
        try FileManager.default.createDirectory(atPath: directory.url("macros"), withIntermediateDirectories: true)
        for (name, text) in files { _ = try directory.write("macros/\(name)", text) }
        var config = MacroConfig(macrosDirectory: directory.url("macros"), stateFile: directory.url("state.json"), timeLimit: .seconds(60))
        config.memoryLimitMB = 128
        config.callDeadline = .seconds(60)
        return (try InProcessService(config: config), directory)
    }

    @Test func callsNotificationsAndStateGoThroughThePipelineOnTheEnginesLoop() async throws {
        let (service, directory) = try Self.service()
        let caller = try await service.connectOnEngineLoop()
        let watcher = try await service.connectOnEngineLoop()
        for client in [caller, watcher] { client.setReceiveTimeout(seconds: 30) }
        _ = try watcher.call("subscribe", ["events": ["progress"]])
        #expect(try caller.call("macro.call", ["name": "bump", "args": [3]]) == 3)
        #expect(try caller.call("macro.call", ["name": "bump", "args": [4]]) == 7)
        let changes = [try watcher.nextNotification(), try watcher.nextNotification()]
        #expect(changes.map { $0?["method"] } == ["progress.changed", "progress.changed"])
        #expect(changes.map { $0?["params"]["inner"] } == [3, 7])
        #expect(try watcher.call("progress.get") == ["inner": 7, "middle": 0, "outer": 0])
        let error = try #require(throws: RPCError.self) { try caller.call("macro.call", ["name": "nope"]) }
        #expect(error.code == RPCError.noSuchMacro)
        withExtendedLifetime(directory) {}
    }

    @Test func whileJavaScriptHoldsTheLoopTheBusyControlListsCancelsAndAnswersProgress() async throws {
        let (service, directory) = try Self.service()
        let callerEnd = try await service.engineLoopDescriptor()
        let control = try await service.connectOnEngineLoop()
        control.setReceiveTimeout(seconds: 30)
        // The spinning call holds the engine's loop until it is cancelled: whatever `control`
        // is answered meanwhile, the busy control answered.
        let outcome = Mutex<Result<MacroValue, RPCError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread {
            let caller = RPCClient(connectedDescriptor: callerEnd, name: "caller")
            caller.setReceiveTimeout(seconds: 30)
            do {
                let value = try caller.call("macro.call", ["name": "spin"])
                outcome.withLock { $0 = .success(value) }
            } catch {
                outcome.withLock { $0 = .failure(error as? RPCError ?? RPCError(code: 0, message: "\(error)")) }
            }
            done.signal()
        }.start()
        // Nothing announces that the call runs while it holds the loop: asked (see `eventually`).
        let running = try #require(
            try eventually { () throws -> MacroValue? in
                let list = try control.call("macro.running")
                return list.arrayValue?.first { $0["name"] == "spin" }
            })
        // Its turn has not committed: the rings are as they were.
        #expect(try control.call("progress.get") == ["inner": 0, "middle": 0, "outer": 0])
        #expect(try control.call("macro.cancel", ["call": running["call"]]) == ["call": running["call"], "cancelled": true])
        #expect(done.wait(timeout: .now() + 30) == .success)
        guard case .failure(let error) = try #require(outcome.withLock { $0 }) else {
            Issue.record("spin returned instead of being cancelled")
            return
        }
        #expect(error.code == RPCError.timeout)
        #expect(error.data?["reason"] == "cancelled")
        // Rolled back, and the loop serves both connections again.
        #expect(try control.call("progress.get") == ["inner": 0, "middle": 0, "outer": 0])
        #expect(try control.call("macro.call", ["name": "bump", "args": [2]]) == 2)
        #expect(try control.call("macro.running") == [])
        withExtendedLifetime(directory) {}
    }

    @Test func requestsSentWhileTheLoopIsHeldAreAnsweredOnceItIsFree() async throws {
        let (service, directory) = try Self.service()
        let callerEnd = try await service.engineLoopDescriptor()
        let other = try await service.connectOnEngineLoop()
        let canceller = try await service.connectOnEngineLoop()
        for client in [other, canceller] { client.setReceiveTimeout(seconds: 30) }
        let done = DispatchSemaphore(value: 0)
        let code = Atomic<Int>(0)
        Thread {
            let caller = RPCClient(connectedDescriptor: callerEnd, name: "caller")
            caller.setReceiveTimeout(seconds: 30)
            do { _ = try caller.call("macro.call", ["name": "spin"]) } catch { code.store((error as? RPCError)?.code ?? 0, ordering: .relaxed) }
            done.signal()
        }.start()
        let running = try #require(
            try eventually { () throws -> MacroValue? in try other.call("macro.running").arrayValue?.first { $0["name"] == "spin" } })
        // Three calls on the other connection, sent while the loop is held: the busy control keeps
        // them for the engine, which answers them in order once the spin is cancelled.
        try other.send(
            raw: [1, 2, 3].map { #"{"jsonrpc":"2.0","id":\#($0),"method":"macro.call","params":{"name":"bump","args":[\#($0)]}}"# }
                .joined(separator: "\n"))
        #expect(try canceller.call("macro.cancel", ["call": running["call"]])["cancelled"] == true)
        #expect(done.wait(timeout: .now() + 30) == .success)
        #expect(code.load(ordering: .relaxed) == RPCError.timeout)
        var replies: [MacroValue] = []
        while replies.count < 3, let message = try other.readMessage() { replies.append(message) }
        #expect(replies.map { $0["id"] } == [1, 2, 3])
        #expect(replies.map { $0["result"] } == [1, 3, 6])
        withExtendedLifetime(directory) {}
    }
}
