import Foundation

/// The time of a log record (ISO-8601 with milliseconds, as macrod sends it) for people.
enum LogTime {
    /// `2026-11-22T07:12:33.123Z` as `2026-11-22 08:12:33.123` in the local time zone; the text
    /// itself when it is not such a time.
    static func local(_ iso: String) -> String {
        let parser = ISO8601DateFormatter()
        parser.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        guard let date = parser.date(from: iso) ?? ISO8601DateFormatter().date(from: iso) else { return iso }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss.SSS"
        return formatter.string(from: date)
    }
}
