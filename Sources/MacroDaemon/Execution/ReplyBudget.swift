import Synchronization

/// Reply bytes the kernel has not taken yet, counted per connection (``Connection/owedBytes``) and
/// in total here. A connection past its share (its `connection_buffer_bytes`, or any owed byte
/// while the total is past ``totalLimit``) has its next requests held by the engine lane until it
/// drains, as its reads are held: a client that asks for large replies and never reads them
/// cannot make macrod hold more than about its share plus one reply, and cannot slow the others.
package final class ReplyBudget: Sendable {
    /// The most reply bytes all connections may owe together before those owing any wait.
    static let totalLimit = 64 << 20

    private let owed = Atomic<Int>(0)

    /// An empty budget.
    package init() {}

    /// Bytes owed by every connection.
    var total: Int { owed.load(ordering: .relaxed) }
    /// The total is past ``totalLimit``.
    var isOver: Bool { total > Self.totalLimit }

    func owe(_ bytes: Int) { owed.add(bytes, ordering: .relaxed) }
    func pay(_ bytes: Int) { owed.subtract(bytes, ordering: .relaxed) }
}

extension Connection {
    /// Reply bytes encoded for this connection: owed until the kernel takes them.
    func owe(_ bytes: Int) {
        guard bytes > 0 else { return }
        owedBytes.add(bytes, ordering: .relaxed)
        replyBudget.owe(bytes)
    }

    /// The kernel took `bytes` of them (or the connection closed).
    func pay(_ bytes: Int) {
        guard bytes > 0 else { return }
        owedBytes.subtract(bytes, ordering: .relaxed)
        replyBudget.pay(bytes)
    }

    /// Whether the engine lane should hold this connection's next request: it owes more than its
    /// share with `extra` bytes of replies made but not yet encoded. A closed connection never waits.
    func mustWait(extra: Int = 0) -> Bool {
        let owed = owedBytes.load(ordering: .relaxed) + extra
        guard owed > 0, channel.isActive else { return false }
        return owed > owedLimit.load(ordering: .relaxed) || replyBudget.isOver
    }
}
