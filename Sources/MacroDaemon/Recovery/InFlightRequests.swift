import MacroEngineCore
import MacroRPC
import NIOCore
import Synchronization

/// Every request handed to the engine (or waiting for a call to stop) and not answered yet, with
/// where its reply goes (``ReplyRoute``). Whoever takes an entry out answers it: the engine when
/// the request completes, or ``StallRecovery`` when the engine is restarted under it, so each
/// request is answered exactly once either way.
final class InFlightRequests: Sendable {
    /// What a request is waiting for, which decides its answer when the engine restarts.
    enum Kind: Sendable {
        /// `macro.call` with its call id.
        case call(Int)
        /// `macro.cancel` of that call: answered once the call has stopped.
        case cancel(Int)
        /// Anything else that runs on the engine.
        case other
    }

    struct Entry: Sendable {
        var id: RPCID?
        var kind: Kind
        /// Where its reply goes.
        var route: ReplyRoute
        /// The request and its connection, to replay it in the next process if it never started.
        var request: RPCRequest? = nil
        var connection: Connection? = nil
        var started: StartFlag? = nil
        /// Its place in a JSON-RPC batch: a restart answers it there, never hands it over alone.
        var batch: BatchReplies.Slot? = nil
    }

    /// How far the engine got with a request, which decides whether a restart may replay it in
    /// the next process: one that never began, or one that finished but whose reply was still
    /// held for its batch's commit (its effects were only in the progress model, never journaled
    /// nor published), is as if it had not arrived yet.
    final class StartFlag: Sendable {
        private let value = Atomic<Int>(0)
        /// The engine began it.
        func set() { value.store(1, ordering: .relaxed) }
        /// The engine finished it (its reply may still be held for the batch's commit).
        func finish() { value.store(2, ordering: .relaxed) }
        /// The engine began it.
        var isSet: Bool { value.load(ordering: .relaxed) >= 1 }
        /// The engine finished it.
        var isFinished: Bool { value.load(ordering: .relaxed) == 2 }
    }

    private let entries = Mutex<[Int: Entry]>([:])
    private let counter = Atomic<Int>(0)

    /// Registers a request; returns its token.
    func add(_ entry: Entry) -> Int {
        let token = counter.add(1, ordering: .relaxed).newValue
        entries.locked { $0[token] = entry }
        return token
    }

    /// Takes the entry out (nil when someone else already answered it).
    func take(_ token: Int) -> Entry? {
        entries.locked { $0.removeValue(forKey: token) }
    }

    /// Takes every entry out (the engine is being restarted).
    func takeAll() -> [Entry] {
        entries.locked { entries in
            defer { entries.removeAll() }
            return entries.sorted { $0.key < $1.key }.map(\.value)
        }
    }

    /// How many are waiting.
    var count: Int { entries.locked { $0.count } }
}
