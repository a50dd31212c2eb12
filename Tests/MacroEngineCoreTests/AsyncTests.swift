import Foundation
import MacroEngineCore
import MacroTestSupport
import NIOCore
import Synchronization
import Testing

@Suite("Async macros: promises, timers, deadlines")
struct AsyncTests {
    @Test func anAsyncFunctionsResultIsTheSettledValue() throws {
        let (engine, _, _) = try makeEngine()
        try engine.evaluate("async function later(x) { await sleep(20); return x * 2 }")
        #expect(try engine.call("later", arguments: [21]) == 42)
        try engine.evaluate("function thenable() { return Promise.resolve({ok: true}) }")
        #expect(try engine.call("thenable") == ["ok": true])
    }

    @Test func aRejectionIsReportedExactlyLikeAThrow() throws {
        let (engine, _, errors) = try makeEngine()
        _ = try engine.setMethod(javascript: "async function() {\n  await sleep(5);\n  throw new TypeError('late');\n}", key: "late", file: "/m/late.js")
        let error = try #require(throws: MacroError.self) { try engine.call("late") }
        #expect(error.code == .threw)
        #expect(error.errorName == "TypeError")
        #expect(error.message == "late")
        #expect(error.file == "/m/late.js")
        #expect(error.line == 3)
        #expect(error.column == 22)
        #expect(errors.recorded == [error])
    }

    @Test func timersFireInOrderAndIntervalsStop() throws {
        let (engine, _, _) = try makeEngine()
        try engine.evaluate(
            """
            function order() {
              return new Promise(function (done) {
                var seen = [];
                setTimeout(function () { seen.push('c') }, 30);
                setTimeout(function (x, y) { seen.push(x + y) }, 10, 'a', 'b');
                var cleared = setTimeout(function () { seen.push('never') }, 5);
                clearTimeout(cleared);
                queueMicrotask(function () { seen.push('micro') });
                var n = 0;
                var id = setInterval(function () { seen.push('i' + (++n)); if (n === 3) clearInterval(id) }, 1);
                setTimeout(function () { done(seen) }, 60);
              });
            }
            """)
        let seen = try #require(try engine.call("order").arrayValue)
        #expect(seen.first == "micro")
        #expect(seen.filter { $0.stringValue?.hasPrefix("i") == true } == ["i1", "i2", "i3"])
        #expect(seen.firstIndex(of: "ab")! < seen.firstIndex(of: "c")!)
        #expect(!seen.contains("never"))
        #expect(seen.count == 6)
    }

    @Test func aThrowingTimerCallbackIsReportedAndTheLoopGoesOn() throws {
        let (engine, _, errors) = try makeEngine()
        try engine.evaluate(
            """
            function survive() {
              setTimeout(function () { throw new Error('in timer') }, 1);
              return sleep(20).then(function () { return 'still here' });
            }
            """)
        #expect(try engine.call("survive") == "still here")
        #expect(errors.recorded.map(\.message) == ["in timer"])
        #expect(errors.recorded.first?.macro == "survive")
    }

    @Test func theDeadlineCoversAwaitedTimeAndCancelsTheCallsTimers() throws {
        let (engine, model, _) = try makeEngine()
        try engine.evaluate(
            """
            async function slowpoke() {
              setTimeout(function () { setOuterProgress(9) }, 300);
              await sleep(200);
              setInnerProgress(7);
            }
            function forever() { return new Promise(function () {}) }
            """)
        let error = try #require(throws: MacroError.self) { try engine.call("slowpoke", timeLimit: .milliseconds(50)) }
        #expect(error.code == .timeout)
        #expect(error.message == "timed out after 50 ms")
        // Nothing of it runs later: neither the continuation after sleep nor its timer. A call
        // that waits 450 ms on the same loop ends after both would have run (timers fire in order).
        try engine.evaluate("async function pastThem() { await sleep(450); return [progress.inner, progress.outer] }")
        #expect(try engine.call("pastThem") == [0, 0])
        #expect(model.valuesByName == ["inner": 0, "middle": 0, "outer": 0])
        let never = try #require(throws: MacroError.self) { try engine.call("forever", timeLimit: .milliseconds(30)) }
        #expect(never.code == .timeout)
    }

    @Test func whileOneCallAwaitsAnotherRuns() throws {
        let (engine, _, _) = try makeEngine()
        try engine.evaluate("async function slow() { await sleep(300); return 'slow' } function fast() { return 'fast' }")
        let order = Mutex<[String]>([])
        let slow = engine.callFuture("slow")
        slow.whenSuccess { value in order.locked { $0.append(value.stringValue!) } }
        let fast = engine.callFuture("fast")
        fast.whenSuccess { value in order.locked { $0.append(value.stringValue!) } }
        #expect(try fast.wait() == "fast")
        #expect(try slow.wait() == "slow")
        #expect(order.locked { $0 } == ["fast", "slow"])
    }

    @Test(arguments: [
        ("sleep(-1)", "sleep: expected a finite number of milliseconds >= 0, got -1"),
        ("sleep('x')", "sleep: expected a finite number of milliseconds >= 0, got string \"x\""),
        ("sleep()", "sleep: expected a finite number of milliseconds >= 0, got undefined"),
        ("setTimeout()", "setTimeout: expected a function, got no argument"),
        ("setTimeout('code', 10)", "setTimeout: expected a function, got string \"code\""),
        ("setInterval(5)", "setInterval: expected a function, got number 5"),
        ("queueMicrotask(null)", "queueMicrotask: expected a function, got object"),
    ])
    func badTimerArgumentsAreTypeErrors(_ source: String, _ message: String) throws {
        let (engine, _, _) = try makeEngine()
        let error = try #require(throws: MacroError.self) { try engine.evaluate(source) }
        #expect(error.errorName == "TypeError")
        #expect(error.message == message)
    }

    @Test func tenThousandTimersAndAZeroIntervalDoNotStarveCalls() throws {
        let (engine, _, _) = try makeEngine()
        try engine.evaluate(
            """
            async function many() {
              var fired = 0;
              for (var i = 0; i < 10000; i++) setTimeout(function () { fired++ }, i % 20);
              await sleep(60);
              return fired;
            }
            function spinner() { var ticks = 0; setInterval(function () { ticks++ }, 0); return 'started' }
            function ping() { return 'pong' }
            """)
        #expect(try engine.call("many") == 10000)
        #expect(try engine.call("spinner") == "started")
        for _ in 0..<20 { #expect(try engine.call("ping") == "pong") }
    }

    @Test func unhandledRejectionsAreReportedWithTheMacroName() throws {
        let (engine, _, errors) = try makeEngine()
        try engine.evaluate("function careless() { Promise.reject(new Error('nobody listens')); return 1 }")
        #expect(try engine.call("careless") == 1)
        #expect(errors.waitFor(1).map(\.message) == ["unhandled promise rejection: nobody listens"])
        #expect(errors.recorded.first?.macro == "careless")
    }

    @Test func consoleGoesToTheHandlerFormattedLikeNode() throws {
        let (engine, _, _) = try makeEngine()
        let messages = Mutex<[ConsoleMessage]>([])
        engine.consoleHandler = { message in messages.locked { $0.append(message) } }
        try engine.evaluate(
            """
            function talk() {
              var o = { a: 1, s: 'x', deep: [1, [2, [3, [4]]]], f: function named() {} };
              o.self = o;
              console.log('plain', 42, o);
              console.info(null, undefined, true, -0, [1, 'two']);
              console.warn(new Map([[1, 'a']]), new Set([2]));
              console.error('bad', { 'odd key': 1 });
              console.debug();
            }
            """)
        try engine.call("talk")
        let got = messages.locked { $0 }
        #expect(got.map(\.level) == [.info, .info, .warning, .error, .debug])
        #expect(
            got.map(\.message) == [
                "plain 42 { a: 1, s: 'x', deep: [ 1, [ 2, [Array] ] ], f: [Function: named], self: [Circular] }",
                "null undefined true -0 [ 1, 'two' ]",
                "Map(1) { 1 => 'a' } Set(1) { 2 }",
                "bad { 'odd key': 1 }",
                "",
            ])
        #expect(got.allSatisfy { $0.macro == "talk" })
    }
}
