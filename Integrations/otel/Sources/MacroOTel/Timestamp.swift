/// macrod's times (`started`: ISO 8601 UTC with milliseconds, `2026-11-22T08:50:39.526Z`) read
/// exactly, without a formatter or a Double of seconds in between.
public enum Timestamp {
    /// The instant `text` names; nil when it is not `YYYY-MM-DDTHH:MM:SS[.fraction]Z`.
    public static func parse(_ text: String) -> RecordInstant? {
        let bytes = Array(text.utf8)
        guard bytes.count >= 20, bytes.last == UInt8(ascii: "Z") else { return nil }
        func number(_ range: Range<Int>) -> Int? {
            var value = 0
            for index in range {
                let digit = Int(bytes[index]) - 48
                guard (0...9).contains(digit) else { return nil }
                value = value * 10 + digit
            }
            return value
        }
        let separators: [(Int, Character)] = [(4, "-"), (7, "-"), (10, "T"), (13, ":"), (16, ":")]
        for (index, separator) in separators where bytes[index] != separator.asciiValue! { return nil }
        guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10), let hour = number(11..<13),
            let minute = number(14..<16), let second = number(17..<19), (1...12).contains(month), (1...31).contains(day), hour < 24,
            minute < 60, second < 61, year >= 1970
        else { return nil }
        var nanoseconds = 0
        let end = bytes.count - 1
        if end > 19 {
            guard bytes[19] == UInt8(ascii: "."), end > 20, end - 20 <= 9, let fraction = number(20..<end) else { return nil }
            nanoseconds = fraction
            for _ in 0..<(9 - (end - 20)) { nanoseconds *= 10 }
        } else if end != 19 {
            return nil
        }
        let days = daysFromCivil(year: year, month: month, day: day)
        let seconds = ((days * 24 + hour) * 60 + minute) * 60 + second
        return RecordInstant(nanosecondsSinceEpoch: UInt64(seconds) * 1_000_000_000 + UInt64(nanoseconds))
    }

    /// `instant` as macrod writes times (UTC, `digits` of the second's fraction: 3, milliseconds,
    /// as macrod writes them; 9 keeps every nanosecond).
    public static func format(_ instant: RecordInstant, digits: Int = 3) -> String {
        let nanoseconds = instant.nanosecondsSinceEpoch
        let seconds = Int(nanoseconds / 1_000_000_000)
        let (year, month, day) = civil(fromDays: seconds / 86_400)
        let time = seconds % 86_400
        func pad(_ value: Int, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        let digits = min(max(digits, 1), 9)
        var fraction = Int(nanoseconds % 1_000_000_000)
        for _ in 0..<(9 - digits) { fraction /= 10 }
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(time / 3600, 2)):\(pad(time / 60 % 60, 2)):\(pad(time % 60, 2)).\(pad(fraction, digits))Z"
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil).
    static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The date `days` after 1970-01-01 (Howard Hinnant's civil_from_days).
    static func civil(fromDays days: Int) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
