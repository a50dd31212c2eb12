import Synchronization

/// The one-time codes `macro dashboard` puts in the URL it opens (`/?code=CODE`) instead of the
/// token: a browser's command line is in `/proc/PID/cmdline`, which every local user can read.
/// A holder of the token asks for a code (`POST /code`); the page trades it, once and within
/// ``lifetime``, for the token (`POST /session`). A URL read from a process list is worthless
/// after its first use, or once expired.
///
/// Codes live in this process's memory only: an engine restart forgets the unused ones (the
/// token itself is kept, so pages that traded theirs reconnect).
package final class OneTimeCodes: Sendable {
    /// Why a code was not accepted.
    package enum Refusal: Error, Equatable, Sendable {
        /// Never issued (or forgotten: more than ``maxKept`` were issued since, or macrod restarted).
        case unknown
        /// Traded already: the second presenter gets nothing.
        case used
        /// Traded already, and presented again before: as ``used`` (worth a log line only once,
        /// so presenting a code read from a process list over and over floods no log).
        case usedAgain
        /// Presented ``lifetime`` or more after it was issued.
        case expired

        /// The response's text (after `401 Unauthorized: `).
        package var message: String {
            switch self {
            case .unknown: return "unknown one-time code; run `macro dashboard` again"
            case .used, .usedAgain: return "this one-time code was already used; run `macro dashboard` again"
            case .expired: return "this one-time code expired (a code lasts \(OneTimeCodes.lifetime.components.seconds) s); run `macro dashboard` again"
            }
        }
    }

    /// How long a code may be traded after it was issued.
    package static let lifetime: Duration = .seconds(60)
    /// At most this many codes (issued or spent) are remembered; the oldest is forgotten first.
    package static let maxKept = 64

    private struct Entry {
        var code: String
        var issued: ContinuousClock.Instant
        var spent: Bool
        var presentedAgain = false
    }

    private let lifetime: Duration
    private let entries = Mutex<[Entry]>([])

    /// Codes that last `lifetime` (``lifetime`` by default).
    package init(lifetime: Duration = OneTimeCodes.lifetime) {
        self.lifetime = lifetime
    }

    /// A new code: 128 random bits as 32 hex digits.
    package func issue(now: ContinuousClock.Instant = .now) -> String {
        var generator = SystemRandomNumberGenerator()
        let code = (0..<2).map { _ in
            let hex = String(generator.next() as UInt64, radix: 16)
            return String(repeating: "0", count: 16 - hex.count) + hex
        }.joined()
        entries.withLock { entries in
            entries.removeAll { now - $0.issued >= lifetime }
            if entries.count >= Self.maxKept { entries.removeFirst(entries.count - Self.maxKept + 1) }
            entries.append(Entry(code: code, issued: now, spent: false))
        }
        return code
    }

    /// Trades `code`: succeeds once, within the lifetime; throws why not otherwise.
    package func redeem(_ code: String, now: ContinuousClock.Instant = .now) throws(Refusal) {
        let outcome: Refusal? = entries.withLock { entries in
            guard let index = entries.firstIndex(where: { Self.equal($0.code, code) }) else { return .unknown }
            if entries[index].spent {
                defer { entries[index].presentedAgain = true }
                return entries[index].presentedAgain ? .usedAgain : .used
            }
            if now - entries[index].issued >= lifetime { return .expired }
            entries[index].spent = true
            return nil
        }
        if let outcome { throw outcome }
    }

    /// Compares without an early exit on the first differing byte.
    private static func equal(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        guard x.count == y.count else { return false }
        var difference: UInt8 = 0
        for index in x.indices { difference |= x[index] ^ y[index] }
        return difference == 0
    }
}
