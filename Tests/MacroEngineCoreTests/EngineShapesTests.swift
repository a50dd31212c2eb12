import Dispatch
import MacroEngineCore
import MacroTestSupport
import Synchronization
import Testing

/// Shapes of JavaScript that ended in a stall restart of the whole
/// engine (the watchdog never saw them, or memory grew past the stall watch's 1.5 x
/// `memory_limit_mb` first) now end in-process, in the call that ran them, with the error of its
/// limit, and the engine goes on.
@Suite("Hostile shapes end in-process")
struct EngineShapesTests {
    /// Calls `name` on another thread and waits at most `seconds` for it (the engine thread of a
    /// shape the watchdog misses never returns: the test fails instead of hanging).
    private func callBounded(_ engine: MacroEngine, _ name: String, seconds: Double = 30) -> Result<MacroValue, MacroError>? {
        let outcome = Mutex<Result<MacroValue, MacroError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            let result: Result<MacroValue, MacroError>
            do { result = .success(try engine.call(name)) } catch let error as MacroError { result = .failure(error) } catch {
                result = .failure(MacroError(code: .threw, message: "\(error)"))
            }
            outcome.withLock { $0 = result }
            done.signal()
        }
        guard done.wait(timeout: .now() + seconds) == .success else { return nil }
        return outcome.withLock { $0 }
    }

    /// WebAssembly's loops run where the watchdog never looks, its memory is not counted, and a
    /// shared WebAssembly.Memory is a SharedArrayBuffer by the back door (a blocking
    /// `Atomics.wait`): macros have none of it.
    @Test func webAssemblyAndSharedMemoryAreNotThere() throws {
        let (engine, _, _) = try makeEngine(timeLimit: .milliseconds(300))
        #expect(try engine.evaluate("[typeof WebAssembly, typeof SharedArrayBuffer, typeof Atomics]") == ["undefined", "undefined", "object"])
        // The trial's (module (func (export "f") (loop (br 0)))).
        try engine.evaluate(
            """
            function wasmLoop() {
              var bytes = new Uint8Array([0,97,115,109,1,0,0,0, 1,4,1,96,0,0, 3,2,1,0, 7,5,1,1,102,0,0, 10,9,1,7,0,3,64,12,0,11,11]);
              new WebAssembly.Instance(new WebAssembly.Module(bytes), {}).exports.f();
            }
            function wait() { return Atomics.wait(new Int32Array(4), 0, 0); }
            """)
        let loop = try #require(callBounded(engine, "wasmLoop"))
        #expect(loop.failure?.errorName == "ReferenceError")
        #expect(loop.failure?.message == "Can't find variable: WebAssembly")
        let wait = try #require(callBounded(engine, "wait"))
        #expect(wait.failure?.errorName == "TypeError")
        #expect(wait.failure?.message == "Typed array for wait/waitAsync/notify must wrap a SharedArrayBuffer.")
    }

    /// An error whose `message` (or `name`, or `toString`) loops was read by the engine after
    /// the watchdog had stopped the first read, with nothing armed: an async macro throwing it,
    /// or an unobserved `Promise.reject` of it, held the engine until the stall restart.
    @Test(arguments: [
        "async function shape() { var e = new Error('x'); Object.defineProperty(e, 'message', { get: function () { for (;;) {} } }); throw e; }",
        "async function shape() { await null; var e = new Error('x'); Object.defineProperty(e, 'message', { get: function () { for (;;) {} } }); throw e; }",
        "function shape() { var e = new Error('x'); Object.defineProperty(e, 'message', { get: function () { for (;;) {} } }); Promise.reject(e); return 1; }",
        "async function shape() { var e = new Error('x'); Object.defineProperty(e, 'name', { get: function () { for (;;) {} } }); throw e; }",
        "async function shape() { throw { toString: function () { for (;;) {} } }; }",
    ])
    func anErrorWhoseGettersLoopIsStoppedAtTheTimeLimit(_ source: String) throws {
        let (engine, _, _) = try makeEngine(timeLimit: .milliseconds(300))
        try engine.evaluate(source)
        let outcome = try #require(callBounded(engine, "shape"), "the call never ended: the engine is stuck")
        #expect(outcome.failure?.code == .timeout)
        #expect(outcome.failure?.message == "timed out after 300 ms")
        #expect(try engine.evaluate("[1, 2].length") == 2)
    }

    /// Two more of the trial's shapes that ended in a stall restart: a 200 MiB string made in one
    /// native step, and `console.log` of 50 MiB. The first is counted (a long string's memory is
    /// in what `memory_limit_mb` judges) and returns; the second leaves JavaScript cut to 65,536
    /// characters. Neither stalls.
    @Test func aHugeStringAndAHugeConsoleLineDoNotStall() throws {
        let engine = MacroEngine(configuration: .init(timeLimit: .seconds(5)), logger: silentLogger)
        let lines = Mutex<[String]>([])
        engine.consoleHandler = { message in lines.withLock { $0.append(message.message) } }
        try engine.evaluate(
            """
            function big() { return "x".repeat(200 * 1024 * 1024).length; }
            function loud() { console.log("y".repeat(50 * 1024 * 1024)); return 1; }
            """)
        #expect(try #require(callBounded(engine, "big")).get() == 209_715_200)
        #expect(try #require(callBounded(engine, "loud")).get() == 1)
        let logged = try #require(lines.withLock { $0.first })
        #expect(logged.count == 65_536 + " [52363264 more characters cut]".count + 1)
        #expect(logged.hasSuffix("\u{2026} [52363264 more characters cut]"))
        #expect(try engine.evaluate("[1, 2].length") == 2)
    }
}

extension Result {
    fileprivate var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
