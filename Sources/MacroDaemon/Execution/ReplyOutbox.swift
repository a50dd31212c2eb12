import MacroRPC
import NIOCore

/// The replies a batch completes on the engine's loop for connections on another loop (the I/O
/// loop, the dashboard's), handed over with one task per loop when the batch ends instead of one
/// cross-thread wake-up per reply. Replies for promises of the engine's own loop
/// (`io_thread: engine`) and replies outside a batch complete at once. Confined to the engine's loop.
final class ReplyOutbox {
    private var depth = 0
    private var pending: [(promise: EventLoopPromise<RPCMessage?>, reply: RPCMessage?)] = []

    /// A batch begins: the replies it completes for other loops wait for its ``end()``.
    func begin() {
        // A batch started from inside another (a delivery, io_thread: engine) may never end (a
        // stall): what the outer one collected leaves first.
        if depth > 0 { flush() }
        depth += 1
    }

    /// The batch ends: the outermost hands over what it collected.
    func end() {
        depth -= 1
        if depth == 0 { flush() }
    }

    /// Completes `promise` with `reply`, now or when the batch ends.
    func succeed(_ promise: EventLoopPromise<RPCMessage?>, _ reply: RPCMessage?) {
        if depth == 0 || promise.futureResult.eventLoop.inEventLoop {
            promise.succeed(reply)
        } else {
            pending.append((promise, reply))
        }
    }

    /// Hands over what was collected so far (a batch's replies, before the next batch's
    /// notifications are published).
    func flush() {
        guard !pending.isEmpty else { return }
        let replies = pending
        pending.removeAll(keepingCapacity: true)
        var byLoop: [ObjectIdentifier: (loop: any EventLoop, items: [(promise: EventLoopPromise<RPCMessage?>, reply: RPCMessage?)])] = [:]
        for item in replies {
            let loop = item.promise.futureResult.eventLoop
            byLoop[ObjectIdentifier(loop), default: (loop, [])].items.append(item)
        }
        for (_, group) in byLoop {
            let items = group.items
            group.loop.execute {
                for item in items { item.promise.succeed(item.reply) }
            }
        }
    }
}
