import Foundation
import MacroBase
import MacroEngineCore
import MacroTestSupport
import Testing

/// What a macro remembers, atomically with the progress model's turn.
@Suite("The per-macro store")
struct StoreTests {
    /// An engine with the model and a store of `limit` bytes per macro, and `macros` defined.
    private static func engine(_ macros: String, limit: Int = MacroStore.defaultLimit, timeLimit: Duration = .milliseconds(300)) throws -> (MacroEngine, MacroStore, ProgressModel)
    {
        let (engine, model, _) = try makeEngine(timeLimit: timeLimit)
        let store = MacroStore(limit: limit)
        store.recordChanges()
        try engine.add(store)
        try engine.evaluate(macros)
        return (engine, store, model)
    }

    private static let counter = """
        function counter() { const n = (store.get("count") ?? 0) + 1; store.set("count", n); return n }
        function failing() { store.set("count", 1000); progress.inner = 5; throw new Error("after the write") }
        """

    @Test func aMacroCountsItsCallsInItsStore() throws {
        let (engine, store, _) = try Self.engine(Self.counter)
        #expect(try engine.call("counter") == 1)
        #expect(try engine.call("counter") == 2)
        #expect(try engine.call("counter") == 3)
        #expect(store.json("counter", "count") == "3")
        // One change per key waits for the journal: its latest value.
        #expect(store.takeUnjournaled() == [StoreChange(macro: "counter", key: "count", json: "3")])
        #expect(store.takeUnjournaled().isEmpty)
    }

    /// An endless loop of writes keeps one entry per key for its turn: it cannot grow the
    /// engine's memory outside the JavaScript heap's limit before the watchdog stops it.
    @Test func aTurnThatWritesInALoopKeepsOneEntryPerKeyAndRollsBackWhole() throws {
        let (engine, store, _) = try Self.engine(
            "function churn() { store.set('kept', 'before'); for (let i = 0; ; i++) { store.set('n', i); store.set('tmp' + i, i); store.delete('tmp' + i); store.delete('kept') } }"
        )
        try store.set("churn", "kept", json: "\"start\"")
        _ = store.takeUnjournaled()
        let error = try #require(throws: MacroError.self) { try engine.call("churn") }
        #expect(error.code == .timeout)
        #expect(store.entries("churn") == ["kept": "\"start\""])
        #expect(store.takeUnjournaled().isEmpty)
    }

    @Test func aKeyATurnCreatesAndDeletesIsNoChange() throws {
        let (engine, store, _) = try Self.engine("function flicker() { store.set('a', 1); store.delete('a'); store.set('b', 2); store.set('b', 3) }")
        _ = try engine.call("flicker")
        #expect(store.takeUnjournaled() == [StoreChange(macro: "flicker", key: "b", json: "3")])
    }

    @Test func aCallThatThrowsLeavesNoStoreChange() throws {
        let (engine, store, model) = try Self.engine(Self.counter + "\nfunction bumpThenFail() { store.set('count', store.get('count') + 1); throw new Error('x') }")
        #expect(try engine.call("counter") == 1)
        _ = store.takeUnjournaled()
        // `failing` writes its own store; `bumpThenFail`, `counter`'s name is not its: its own store too.
        #expect(throws: MacroError.self) { try engine.call("failing") }
        #expect(store.json("failing", "count") == nil)
        #expect(model.valuesByName["inner"] == 0)
        #expect(store.json("counter", "count") == "1")
        #expect(store.takeUnjournaled().isEmpty)
    }

    @Test func aCallStoppedByItsTimeLimitLeavesNoStoreChange() throws {
        let (engine, store, _) = try Self.engine("function spin() { store.set('a', 1); store.delete('b'); for (;;) {} }")
        try store.set("spin", "b", json: "\"kept\"")
        _ = store.takeUnjournaled()
        let error = try #require(throws: MacroError.self) { try engine.call("spin") }
        #expect(error.code == .timeout)
        #expect(store.entries("spin") == ["b": "\"kept\""])
        #expect(store.takeUnjournaled().isEmpty)
    }

    /// A cancel rolls back the turn it stops, in a synchronous call or in an async call's later
    /// turn; an async call's turns that ended before the cancel stay committed, one by one.
    @Test func aCancelRollsBackTheTurnItStopsAndNoMore() throws {
        let (engine, store, _) = try Self.engine(
            """
            function spinning() { store.set('a', 1); store.delete('b'); for (;;) {} }
            async function spinningLater() { await sleep(1); store.set('a', 2); store.delete('b'); for (;;) {} }
            async function awaiting() { store.set('a', 3); store.delete('b'); await sleep(60000); store.set('c', 4) }
            """, timeLimit: .seconds(60))
        let expected: [String: [String: String]] = [
            "spinning": ["b": "\"kept\""], "spinningLater": ["b": "\"kept\""], "awaiting": ["a": "3"],
        ]
        for name in ["spinning", "spinningLater", "awaiting"] {
            try store.set(name, "b", json: "\"kept\"")
            _ = store.takeUnjournaled()
            // Its first turn's end (the turn observer runs once the turn has committed).
            let turnEnded = DispatchSemaphore(value: 0)
            engine.onTurnEnd { turnEnded.signal() }
            let future = engine.callFuture(name, deadline: .seconds(60))
            let running = try runningCall(engine, name)
            if name == "awaiting" {
                // Cancelled once its first turn has committed, while it awaits.
                #expect(turnEnded.wait(timeout: .now() + 10) == .success)
                #expect(store.entries(name)["a"] == "3")
            }
            engine.onTurnEnd(nil)
            #expect(engine.cancel(call: running.id))
            let error = try #require(throws: MacroError.self) { try future.wait() }
            #expect(error.code == .cancelled, "\(name)")
            #expect(store.entries(name) == expected[name], "\(name)")
        }
    }

    @Test func eachMacroSeesItsOwnStoreAndALibFunctionUsesItsCallers() throws {
        let (engine, store, _) = try Self.engine(
            """
            function remember(key, value) { store.set(key, value) }
            function first() { remember("who", "first"); return store.keys() }
            function second() { remember("who", "second"); return store.get("who") }
            """)
        #expect(try engine.call("first") == ["who"])
        #expect(try engine.call("second") == "second")
        #expect(store.entries("first") == ["who": "\"first\""])
        #expect(store.entries("second") == ["who": "\"second\""])
    }

    @Test func valuesAreJSONCopies() throws {
        let (engine, _, _) = try Self.engine(
            """
            function roundTrip() {
              const value = { list: [1, "two", null, true], nested: { when: new Date(0) } };
              store.set("v", value);
              value.list.push(99);
              const back = store.get("v");
              back.list.push(100);
              return [store.get("v"), store.get("missing") === undefined, store.delete("v"), store.delete("v"), store.keys()];
            }
            """)
        #expect(
            try engine.call("roundTrip") == [
                ["list": [1, "two", .null, true], "nested": ["when": "1970-01-01T00:00:00.000Z"]], true, true, false, [],
            ])
    }

    @Test func aValueWithoutJSONFormIsATypeErrorAndWritesNothing() throws {
        let (engine, store, _) = try Self.engine(
            """
            function bad(kind) {
              const values = { undef: undefined, fn: () => 1, sym: Symbol("s"), big: 1n, cyclic: (() => { const o = {}; o.o = o; return o })() };
              try { store.set("k", values[kind]); return "stored" } catch (e) { return e.name + ": " + e.message }
            }
            function badKey() { try { store.set(1, 2); return "stored" } catch (e) { return e.name + ": " + e.message } }
            """)
        #expect(try engine.call("bad", arguments: ["undef"]) == "TypeError: store.set: a undefined has no JSON form and cannot be stored (store.delete(key) removes a key)")
        #expect(try engine.call("bad", arguments: ["fn"]) == "TypeError: store.set: a function has no JSON form and cannot be stored (store.delete(key) removes a key)")
        #expect(try engine.call("bad", arguments: ["sym"]) == "TypeError: store.set: a symbol has no JSON form and cannot be stored (store.delete(key) removes a key)")
        #expect(try engine.call("bad", arguments: ["big"]).stringValue?.hasPrefix("TypeError:") == true)
        #expect(try engine.call("bad", arguments: ["cyclic"]).stringValue?.hasPrefix("TypeError:") == true)
        #expect(try engine.call("badKey") == "TypeError: store.set: the key must be a string, got number")
        #expect(store.entries("bad").isEmpty)
    }

    @Test func aSetOverTheLimitIsARangeErrorAndWritesNothing() throws {
        let (engine, store, _) = try Self.engine(
            """
            function fill(size) {
              store.set("small", "x");
              try { store.set("big", "y".repeat(size)); return "stored" } catch (e) { return e.name + ": " + e.message }
            }
            """, limit: 1024)
        // "small" + "\"x\"" = 8 bytes; "big" + 2 quotes + 1014 = 1019: 1027 in all, over 1024.
        #expect(
            try engine.call("fill", arguments: [1014])
                == "RangeError: store.set: 'big' would make the store of macro 'fill' 1027 bytes, over its limit of 1024 (store_limit_bytes); nothing was written")
        #expect(store.entries("fill") == ["small": "\"x\""])
        #expect(store.bytes("fill") == 8)
        // Exactly at the limit is allowed.
        #expect(try engine.call("fill", arguments: [1011]) == "stored")
        #expect(store.bytes("fill") == 1024)
    }

    @Test func aValueNestedTooDeeplyIsRefused() throws {
        let (engine, store, _) = try Self.engine(
            "function deep() { let v = 0; for (let i = 0; i < 200; i++) v = [v]; try { store.set('d', v); return 'stored' } catch (e) { return e.name } }")
        #expect(try engine.call("deep") == "RangeError")
        #expect(store.entries("deep").isEmpty)
    }

    @Test func codeRunAtLoadHasNoStore() throws {
        let (engine, _, _) = try Self.engine("")
        let error = try #require(throws: MacroError.self) { try engine.evaluate("store.set('x', 1)") }
        #expect(error.message == "store.set: no macro is running; a store belongs to the macro whose call runs (code run at load, and the REPL, have none)")
    }

    @Test func theStoreObjectCannotBeReplacedOrChanged() throws {
        let (engine, _, _) = try Self.engine(
            """
            function tamper() {
              "use strict";
              const tries = [() => { store = {} }, () => { store.get = () => 42 }, () => { delete store.set }];
              return tries.map((t) => { try { t(); return "changed" } catch (e) { return e.name } });
            }
            """)
        #expect(try engine.call("tamper") == ["TypeError", "TypeError", "TypeError"])
    }

    @Test func anAsyncMacroKeepsItsStoreAcrossAwaits() throws {
        let (engine, store, _) = try Self.engine(
            "async function later() { store.set('a', 1); await sleep(5); store.set('b', store.get('a') + 1); return store.keys() }")
        #expect(try engine.call("later") == ["a", "b"])
        #expect(store.entries("later") == ["a": "1", "b": "2"])
    }
}
