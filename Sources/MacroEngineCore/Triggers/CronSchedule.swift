import Foundation

/// A 5-field cron expression (`minute hour day-of-month month day-of-week`), as cron reads it:
/// `*`, numbers, ranges `a-b`, steps `*/n` and `a-b/n`, lists `a,b`, month and day names
/// (`JAN`, `MON`), Sunday as 0 or 7. When both day fields are restricted, a day matching either
/// matches (cron's rule).
public struct CronSchedule: Sendable, Equatable {
    let minutes: Set<Int>
    let hours: Set<Int>
    let days: Set<Int>
    let months: Set<Int>
    let weekdays: Set<Int>
    let daysRestricted: Bool
    let weekdaysRestricted: Bool
    /// The expression as written.
    public let text: String

    /// Parses `text`; throws a message naming the bad field.
    public init(_ text: String) throws(CronError) {
        let fields = text.split(whereSeparator: \.isWhitespace).map(String.init)
        guard fields.count == 5 else {
            throw CronError("'\(text)' has \(fields.count) field\(fields.count == 1 ? "" : "s"); a cron expression has 5: minute hour day-of-month month day-of-week")
        }
        let months = ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"]
        let weekdays = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"]
        minutes = try Self.field(fields[0], name: "minute", range: 0...59)
        hours = try Self.field(fields[1], name: "hour", range: 0...23)
        days = try Self.field(fields[2], name: "day of month", range: 1...31)
        self.months = try Self.field(fields[3], name: "month", range: 1...12, names: months, base: 1)
        self.weekdays = Set(try Self.field(fields[4], name: "day of week", range: 0...7, names: weekdays, base: 0).map { $0 % 7 })
        daysRestricted = fields[2] != "*" && fields[2] != "?"
        weekdaysRestricted = fields[4] != "*" && fields[4] != "?"
        self.text = text
    }

    private static func field(_ text: String, name: String, range: ClosedRange<Int>, names: [String] = [], base: Int = 0) throws(CronError) -> Set<Int> {
        func number(_ part: Substring) throws(CronError) -> Int {
            if let value = Int(part), range.contains(value) { return value }
            if let index = names.firstIndex(of: part.uppercased()) { return index + base }
            throw CronError("\(name) '\(part)' is not in \(range.lowerBound)-\(range.upperBound)\(names.isEmpty ? "" : " (or \(names.first!)-\(names.last!))")")
        }
        var values: Set<Int> = []
        for item in text.split(separator: ",", omittingEmptySubsequences: false) {
            let stepParts = item.split(separator: "/", omittingEmptySubsequences: false)
            guard stepParts.count <= 2, let spanText = stepParts.first, !spanText.isEmpty else { throw CronError("\(name) '\(item)' is not a cron field") }
            var step = 1
            if stepParts.count == 2 {
                guard let parsed = Int(stepParts[1]), parsed > 0 else { throw CronError("\(name) step '\(stepParts[1])' is not a positive number") }
                step = parsed
            }
            var low = range.lowerBound, high = range.upperBound
            if spanText != "*" && spanText != "?" {
                let bounds = spanText.split(separator: "-", omittingEmptySubsequences: false)
                guard bounds.count <= 2 else { throw CronError("\(name) '\(spanText)' is not a range") }
                low = try number(bounds[0])
                high = bounds.count == 2 ? try number(bounds[1]) : (stepParts.count == 2 ? range.upperBound : low)
                guard low <= high else { throw CronError("\(name) range '\(spanText)' goes backwards") }
            }
            values.formUnion(stride(from: low, through: high, by: step))
        }
        return values
    }

    private func dayMatches(day: Int, weekday: Int) -> Bool {
        let domOK = days.contains(day), dowOK = weekdays.contains(weekday)
        if daysRestricted && weekdaysRestricted { return domOK || dowOK }
        return domOK && dowOK
    }

    /// The first minute after `date` that matches, in `timeZone`; nil when none within 5 years
    /// (`0 0 30 2 *`). A wall time a daylight-saving change skips runs at the time the change
    /// moves it to; a repeated hour runs once (`previous`, the last fire, is not repeated).
    public func next(after date: Date, in timeZone: TimeZone, previous: Date? = nil) -> Date? {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        var start = date.addingTimeInterval(60 - date.timeIntervalSince1970.truncatingRemainder(dividingBy: 60))
        let previousWall = previous.map { calendar.dateComponents([.year, .month, .day, .hour, .minute], from: $0) }
        for _ in 0..<(366 * 5) {
            let parts = calendar.dateComponents([.year, .month, .day, .hour, .minute, .weekday], from: start)
            guard let year = parts.year, let month = parts.month, let day = parts.day, let hour = parts.hour, let minute = parts.minute, let weekday = parts.weekday else {
                return nil
            }
            if months.contains(month), dayMatches(day: day, weekday: weekday - 1) {
                for h in hours.sorted() where h >= hour {
                    for m in minutes.sorted() where h > hour || m >= minute {
                        guard let candidate = calendar.date(from: DateComponents(year: year, month: month, day: day, hour: h, minute: m)), candidate > date else { continue }
                        if let previousWall, previousWall == calendar.dateComponents([.year, .month, .day, .hour, .minute], from: candidate) { continue }
                        return candidate
                    }
                }
            }
            // The next day, at midnight.
            guard let midnight = calendar.date(from: DateComponents(year: year, month: month, day: day)),
                let nextDay = calendar.date(byAdding: .day, value: 1, to: midnight)
            else { return nil }
            start = nextDay
        }
        return nil
    }
}

/// Why a cron expression does not parse.
public struct CronError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is wrong.
    public let description: String
    init(_ description: String) { self.description = description }
}
