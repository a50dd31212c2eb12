/// How macrod writes its log on stderr (`log_format`).
public enum LogFormat: String, Sendable, CaseIterable {
    /// One record per line (plus indented continuation lines): time, level, message, `key=value` metadata.
    case text
    /// One JSON object per line: `timestamp`, `level`, `message`, `macro`, `call`, then `metadata`.
    case json
}
