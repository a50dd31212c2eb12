import MacroRPC
import NIOCore
import Synchronization

/// The replies of one JSON-RPC batch, gathered into its array: by its elements' futures as they
/// complete, or by an engine restart, which answers in place every element it takes (an element
/// is never handed over to the next process alone: its reply belongs in the array). Whoever
/// fills the last slot sends the array.
final class BatchReplies: Sendable {
    /// One element's place in a batch (kept in its ``InFlightRequests`` entry).
    struct Slot: Sendable {
        let batch: BatchReplies
        let index: Int
    }

    /// Completed with the batch's array (nil: every element was a notification) once every slot is filled.
    let promise: EventLoopPromise<RPCMessage?>
    private let slots: Mutex<(replies: [RPCMessage?], filled: [Bool], left: Int)>

    /// A batch of `count` elements whose array completes `promise`.
    init(count: Int, promise: EventLoopPromise<RPCMessage?>) {
        self.promise = promise
        slots = Mutex((Array(repeating: nil, count: count), Array(repeating: false, count: count), count))
    }

    /// Fills slot `index` (the first fill counts). Returns the array when this fill was the last
    /// (`.some(nil)`: nothing to answer), else nil; the caller sends it.
    func fill(_ index: Int, _ reply: RPCMessage?) -> RPCMessage?? {
        slots.withLock { slots -> RPCMessage?? in
            guard !slots.filled[index] else { return nil }
            slots.filled[index] = true
            slots.replies[index] = reply
            slots.left -= 1
            guard slots.left == 0 else { return nil }
            let replies = slots.replies.compactMap { $0 }
            return .some(replies.isEmpty ? nil : RPCMessage(batch: replies))
        }
    }

    /// Fills slot `index` and completes the promise when that was the last.
    func deliver(_ index: Int, _ reply: RPCMessage?) {
        if let array = fill(index, reply) { promise.succeed(array) }
    }
}
