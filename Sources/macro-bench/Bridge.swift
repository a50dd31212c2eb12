import CJavaScriptCore
import Foundation
import Logging
import MacroEngineCore

/// Scenario 3: JS -> native calls. The same loop calls `setInnerProgress` through MacroEngine's
/// registered progress closures, and through a raw JSC C callback that does the same work
/// (read the number, reject non-finite, clamp to 0...10, store).
enum Bridge {
    static func loop(_ count: Int) -> String {
        "for (let i = 0; i < \(count); i++) setInnerProgress(i % 12);"
    }

    /// Nanoseconds per call through MacroEngine (best of `rounds`).
    static func engine(calls: Int, rounds: Int = 3) throws -> Double {
        let (engine, model) = try makeBenchEngine()
        var best = Double.infinity
        for _ in 0..<rounds {
            let start = monotonicNanoseconds()
            _ = try engine.evaluate(loop(calls))
            best = min(best, Double(monotonicNanoseconds() - start) / Double(calls))
        }
        guard model.values.first?.1 == Double((calls - 1) % 12).clamped(to: 0...10) else {
            throw BenchError("bridge: the engine loop did not set inner (got \(model.values))")
        }
        return best
    }

    /// Nanoseconds per call through a raw C callback (best of `rounds`).
    static func raw(calls: Int, rounds: Int = 3) throws -> Double {
        let context = JSGlobalContextCreate(nil)!
        defer { JSGlobalContextRelease(context) }
        let name = JSStringCreateWithUTF8CString("setInnerProgress")
        defer { JSStringRelease(name) }
        let function = JSObjectMakeFunctionWithCallback(context, name) { context, _, _, count, arguments, exception in
            guard count >= 1, let arguments else { return JSValueMakeUndefined(context) }
            let number = JSValueToNumber(context, arguments[0], exception)
            if !number.isFinite {
                let message = JSStringCreateWithUTF8CString("setInnerProgress: not a finite number")
                exception?.pointee = JSValueMakeString(context, message)
                JSStringRelease(message)
                return JSValueMakeUndefined(context)
            }
            RawStore.value = min(10, max(0, number))
            return JSValueMakeUndefined(context)
        }
        JSObjectSetProperty(context, JSContextGetGlobalObject(context), name, function, 0, nil)
        let best = try timeLoop(context, calls: calls, rounds: rounds)
        guard RawStore.value == Double((calls - 1) % 12).clamped(to: 0...10) else { throw BenchError("bridge: raw loop did not store") }
        return best
    }
}

extension Bridge {
    /// Nanoseconds per call through a raw JSClass `callAsFunction` (the mechanism MacroEngine's
    /// native functions use, so the bridge's own overhead can be told from the class's).
    static func rawClass(calls: Int, rounds: Int = 3) throws -> Double {
        let context = JSGlobalContextCreate(nil)!
        defer { JSGlobalContextRelease(context) }
        var definition = kJSClassDefinitionEmpty
        definition.callAsFunction = { context, _, _, count, arguments, exception in
            guard count >= 1, let arguments else { return JSValueMakeUndefined(context) }
            let number = JSValueToNumber(context, arguments[0], exception)
            RawStore.value = min(10, max(0, number))
            return JSValueMakeUndefined(context)
        }
        let jsClass = JSClassCreate(&definition)
        defer { JSClassRelease(jsClass) }
        let name = JSStringCreateWithUTF8CString("setInnerProgress")
        defer { JSStringRelease(name) }
        let function = JSObjectMake(context, jsClass, nil)
        JSObjectSetProperty(context, JSContextGetGlobalObject(context), name, function, 0, nil)
        return try timeLoop(context, calls: calls, rounds: rounds)
    }

    /// Runs ``loop(_:)`` in `context` `rounds` times: the best nanoseconds per call.
    private static func timeLoop(_ context: JSGlobalContextRef, calls: Int, rounds: Int) throws -> Double {
        let script = JSStringCreateWithUTF8CString(loop(calls))
        defer { JSStringRelease(script) }
        var best = Double.infinity
        for _ in 0..<rounds {
            var exception: JSValueRef?
            let start = monotonicNanoseconds()
            JSEvaluateScript(context, script, nil, nil, 1, &exception)
            best = min(best, Double(monotonicNanoseconds() - start) / Double(calls))
            if exception != nil { throw BenchError("bridge: the raw loop threw") }
        }
        return best
    }
}

/// Where the raw callback stores its value. Only the benchmark's main thread, which runs the raw
/// context, touches it.
enum RawStore {
    nonisolated(unsafe) static var value: Double = 0
}

extension Double {
    func clamped(to range: ClosedRange<Double>) -> Double { Swift.min(range.upperBound, Swift.max(range.lowerBound, self)) }
}

/// The engine's own cost of one macro call, without a socket: `callFuture` of the benchmark macro
/// on the engine's loop, N times in a row (best of `rounds`), in nanoseconds per call.
enum InProcessCall {
    static func measure(calls: Int, rounds: Int = 3) throws -> Double {
        let (engine, _) = try makeBenchEngine()
        _ = try engine.setMethod(javascript: Macrod.addMacro, key: "add")
        var best = Double.infinity
        for _ in 0..<rounds {
            let nanoseconds = try engine.eventLoop.submit { () -> UInt64 in
                let start = monotonicNanoseconds()
                for _ in 0..<calls { _ = engine.callFuture("add", arguments: [.number(0.5)]) }
                return monotonicNanoseconds() - start
            }.wait()
            best = min(best, Double(nanoseconds) / Double(calls))
        }
        return best
    }
}

/// An in-process engine with the default progress model (three rings), silent, with a long time limit.
func makeBenchEngine() throws -> (MacroEngine, ProgressModel) {
    var logger = Logger(label: "bench")
    logger.logLevel = .critical
    let engine = MacroEngine(configuration: .init(timeLimit: .seconds(120)), logger: logger)
    let model = ProgressModel(channels: ProgressChannel.rings)
    try engine.add(model)
    return (engine, model)
}
