import Foundation
import MacroBase
import MacroRPC
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The REPL's input evaluated by the daemon (`engine.eval`) and shown like the local REPL:
/// `undefined` as undefined, a promise awaited (its settled value fetched when it settles),
/// values formatted like console.log.
struct DaemonEval {
    let client: RPCClient
    /// Set by Ctrl-C: stop waiting for a promise.
    let interrupted: InterruptFlag

    static let undefinedMarker = "__macroengine_repl_undefined__"
    static let pendingMarker = "__macroengine_repl_pending__"

    /// The input as an expression whose value comes back marked; nil when it is not one.
    static func wrapped(_ source: String) -> String {
        """
        (function () { var v = (
        \(source)
        ); if (v === undefined) return "\(undefinedMarker)";
        if (v !== null && typeof v === "object" && typeof v.then === "function") {
          globalThis.__macroengineRepl = { done: false };
          v.then(function (r) { globalThis.__macroengineRepl = { done: true, value: r === undefined ? "\(undefinedMarker)" : r }; },
                 function (e) { globalThis.__macroengineRepl = { done: true, error: String(e && e.stack ? e + "" : e) }; });
          return "\(pendingMarker)";
        }
        return v; })()
        """
    }

    /// Evaluates `source`: as an expression when it is one (so undefined and promises are
    /// seen), else as the script it is.
    func evaluate(_ source: String) throws -> String {
        let value: MacroValue
        do {
            value = try client.call("engine.eval", ["source": .string(Self.wrapped(source))])
        } catch let error as RPCError where error.code == RPCError.syntaxError {
            // A statement or declaration: run it as written.
            let plain = try client.call("engine.eval", ["source": .string(source)])
            return plain == .undefined || plain == .null ? "undefined" : ReplFormat.inspect(plain)
        }
        if value == .string(Self.pendingMarker) { return try awaitSettled() }
        return show(value)
    }

    private func show(_ value: MacroValue) -> String {
        value == .string(Self.undefinedMarker) || value == .undefined ? "undefined" : ReplFormat.inspect(value)
    }

    /// Polls (every 20 ms) until the promise settles.
    private func awaitSettled() throws -> String {
        interrupted.reset()
        while true {
            if interrupted.isSet {
                return "interrupted (the promise goes on in the daemon until its deadline)"
            }
            let state = try client.call("engine.eval", ["source": "globalThis.__macroengineRepl"])
            if state["done"] == true {
                if let error = state["error"].stringValue { throw RPCError(code: RPCError.macroThrew, message: error) }
                return show(state["value"])
            }
            usleep(20_000)
        }
    }
}

/// A flag set from the SIGINT handler's queue and read by the REPL's thread.
final class InterruptFlag: Sendable {
    private let flag = Atomic<Bool>(false)
    /// Sets it.
    func set() { flag.store(true, ordering: .relaxed) }
    /// Clears it.
    func reset() { flag.store(false, ordering: .relaxed) }
    /// True once set (and not reset).
    var isSet: Bool { flag.load(ordering: .relaxed) }
}
