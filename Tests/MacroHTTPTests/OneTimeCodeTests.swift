import MacroHTTP
import Testing

/// The one-time codes `macro dashboard` opens the page with, on a clock the test sets (no waiting).
@Suite("One-time codes")
struct OneTimeCodeTests {
    @Test func aCodeWorksOnceWithinItsLifetimeAndNeverAfter() throws {
        let codes = OneTimeCodes()
        let start = ContinuousClock.now
        let code = codes.issue(now: start)
        #expect(code.count == 32 && code.allSatisfy(\.isHexDigit))
        #expect(OneTimeCodes.lifetime == .seconds(60))
        try codes.redeem(code, now: start.advanced(by: .seconds(60) - .milliseconds(1)))
        #expect(throws: OneTimeCodes.Refusal.used) { try codes.redeem(code, now: start.advanced(by: .seconds(1))) }
        // Said once as `used` (macrod logs it), then `usedAgain` (not logged again), same text.
        #expect(throws: OneTimeCodes.Refusal.usedAgain) { try codes.redeem(code, now: start.advanced(by: .seconds(2))) }
        #expect(OneTimeCodes.Refusal.usedAgain.message == OneTimeCodes.Refusal.used.message)
        // Expired: refused, and still refused (it was not traded).
        let late = codes.issue(now: start)
        #expect(throws: OneTimeCodes.Refusal.expired) { try codes.redeem(late, now: start.advanced(by: .seconds(60))) }
        #expect(throws: OneTimeCodes.Refusal.expired) { try codes.redeem(late, now: start.advanced(by: .seconds(61))) }
        #expect(OneTimeCodes.Refusal.expired.message == "this one-time code expired (a code lasts 60 s); run `macro dashboard` again")
        #expect(throws: OneTimeCodes.Refusal.unknown) { try codes.redeem("", now: start) }
        #expect(throws: OneTimeCodes.Refusal.unknown) { try codes.redeem(String(code.dropLast()), now: start) }
    }

    @Test func atMost64CodesAreKeptTheOldestForgottenFirst() throws {
        let codes = OneTimeCodes()
        let start = ContinuousClock.now
        let issued = (0...OneTimeCodes.maxKept).map { codes.issue(now: start.advanced(by: .milliseconds($0))) }
        #expect(Set(issued).count == OneTimeCodes.maxKept + 1)
        #expect(throws: OneTimeCodes.Refusal.unknown) { try codes.redeem(issued[0], now: start.advanced(by: .seconds(1))) }
        for code in issued.dropFirst() { try codes.redeem(code, now: start.advanced(by: .seconds(1))) }
        // Issuing later forgets the expired ones.
        _ = codes.issue(now: start.advanced(by: .seconds(120)))
        #expect(throws: OneTimeCodes.Refusal.unknown) { try codes.redeem(issued[1], now: start.advanced(by: .seconds(120))) }
    }
}
