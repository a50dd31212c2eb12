/// The flow control of one JSON-RPC connection, whatever its transport: how many requests are
/// admitted and unanswered, how many replies the kernel has not taken, whether a read is held,
/// and when a connection whose client stopped sending may close. Its channel handler drives it
/// (`ConnectionHandler` on the Unix socket, `WebSocketSession` on the dashboard's WebSocket), as
/// postgres-nio's `ConnectionStateMachine` is driven by its handler: the handler reports events
/// and does what the answers say; the rules are here, once, and tested without a channel.
///
/// The bounds: nothing more is read while `maxInFlight` (`connection_in_flight`) requests are
/// unanswered or as many replies are unsent, or while the transport holds reads for a reason of
/// its own (a WebSocket's unsent pong). A batch counts as one request.
package struct RPCSessionState: Sendable {
    /// `connection_in_flight`.
    package let maxInFlight: Int
    /// Requests admitted and not answered yet.
    package private(set) var inFlight = 0
    /// Replies written that the kernel has not taken yet (the client is not reading).
    package private(set) var unsent = 0
    /// The client will send nothing more (it half-closed): close once everything is answered.
    package private(set) var inputClosed = false
    /// The transport holds reads for a reason of its own.
    package var heldByTransport = false
    private var readHeld = false

    /// A connection that reads while fewer than `maxInFlight` requests are unanswered.
    package init(maxInFlight: Int) {
        self.maxInFlight = maxInFlight
    }

    /// Whether the bounds allow reading more.
    package var mayRead: Bool { inFlight < maxInFlight && unsent < maxInFlight && !heldByTransport }

    /// NIO asks to read (`read(context:)`): true to read now; false when the read is held until
    /// ``resume(writable:)`` says otherwise. `writable`: whether the channel takes output (a
    /// transport without its own back-pressure handler holds reads while it does not).
    package mutating func readRequested(writable: Bool = true) -> Bool {
        if mayRead && writable { return true }
        readHeld = true
        return false
    }

    /// A request (or a batch) was admitted.
    package mutating func admitted() { inFlight += 1 }

    /// A request was answered (its reply, if any, written). True: close the connection now (the
    /// input closed and this was the last one).
    package mutating func answered() -> Bool {
        inFlight -= 1
        return inputClosed && inFlight == 0
    }

    /// The client half-closed. True: close now (nothing is unanswered); else the last answer closes.
    package mutating func closeInput() -> Bool {
        inputClosed = true
        return inFlight == 0
    }

    /// `count` replies were flushed and wait for the kernel.
    package mutating func repliesUnsent(_ count: Int) { unsent += count }

    /// The kernel took `count` replies.
    package mutating func repliesSent(_ count: Int) { unsent -= count }

    /// Whether reads may go on now (after an answer, a reply sent, writability back): the
    /// transport then resumes its own held input, and issues the held read if
    /// ``takeHeldRead()`` says there is one.
    package func mayResume(writable: Bool) -> Bool { mayRead && writable }

    /// The read NIO asked for while the bounds held it: true once (issue it now).
    package mutating func takeHeldRead() -> Bool {
        defer { readHeld = false }
        return readHeld
    }
}
