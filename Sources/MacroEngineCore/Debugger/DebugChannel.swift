import Foundation

/// The rendezvous between a stopped session's thread and the clients: the session's thread
/// blocks in ``awaitCommand(idle:)`` while stopped (that thread is the session's own, never the
/// daemon's engine), and a client's ``submit(_:reply:)`` hands it the next command. Commands
/// that need the session's JavaScript (stack, variables, evaluate, stepping) go through here;
/// a command submitted while the session runs is refused at once.
///
/// `@unchecked Sendable`: every stored property is read and written only with `condition`
/// locked (NSCondition is a mutex with a condition variable); the replies it stores are
/// `@Sendable` closures.
final class DebugChannel: @unchecked Sendable {
    /// A reply to one command: the agent's JSON answer, or why there is none.
    typealias Reply = @Sendable (Result<MacroValue, DebugError>) -> Void

    private let condition = NSCondition()
    private var queue: [(command: MacroValue, reply: Reply)] = []
    private var current: Reply?
    private var stopped = false
    private var ended = false

    /// True while the session's thread waits for commands.
    var isStopped: Bool { condition.withLock { stopped } }

    /// Queues `command` for the stopped session, or refuses it.
    func submit(_ command: MacroValue, reply: @escaping Reply) {
        let refusal: DebugError? = condition.withLock {
            if ended { return DebugError(.ended, "the debug session has ended") }
            guard stopped else { return DebugError(.notStopped, "the macro is running; this request needs it stopped (pause it first)") }
            queue.append((command, reply))
            condition.signal()
            return nil
        }
        if let refusal { reply(.failure(refusal)) }
    }

    /// Marks the session stopped (the session's thread, before it reports the stop).
    func beginStop() { condition.withLock { stopped = true } }

    /// Answers the command being run, if any.
    func answer(_ json: String) {
        let reply: Reply? = condition.withLock {
            defer { current = nil }
            return current
        }
        guard let reply else { return }
        do {
            let value = try JSONParser.parse(json, maximumDepth: 512)
            if let message = value["error"].stringValue {
                reply(.failure(DebugError(.evaluationFailed, message)))
            } else {
                reply(.success(value))
            }
        } catch {
            reply(.failure(DebugError(.invalidRequest, "the debugger's answer was not JSON: \(error)")))
        }
    }

    /// The session's thread: blocks until the next command, and returns it. Returns nil when
    /// the session ended (``end()``) or no command came for `idle` (the caller then ends it).
    func awaitCommand(idle: Duration) -> MacroValue? {
        condition.lock()
        defer { condition.unlock() }
        let limit = Date().addingTimeInterval(Double(idle.components.seconds) + Double(idle.components.attoseconds) / 1e18)
        while queue.isEmpty && !ended {
            if !condition.wait(until: limit) && queue.isEmpty { return nil }
        }
        if ended { return nil }
        let next = queue.removeFirst()
        current = next.reply
        return next.command
    }

    /// The session's thread resumes running.
    func endStop() { condition.withLock { stopped = false } }

    /// Ends the session: a waiting thread wakes up with nil; queued and later commands fail.
    func end() {
        let waiting: [Reply] = condition.withLock {
            ended = true
            let replies = queue.map(\.reply) + (current.map { [$0] } ?? [])
            queue.removeAll()
            current = nil
            condition.broadcast()
            return replies
        }
        waiting.forEach { $0(.failure(DebugError(.ended, "the debug session has ended"))) }
    }

    var hasEnded: Bool { condition.withLock { ended } }
}
