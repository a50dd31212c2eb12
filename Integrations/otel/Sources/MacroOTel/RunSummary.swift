import MacroBase

/// A run as `run.list` lists it and `run.recorded` announces it: `{id, call, macro, origin,
/// started, ok, ms, error?}`, the parts the feed needs to know which runs to fetch.
struct RunSummary: Equatable {
    /// The run's id.
    var id: Int
    /// When it ended (`started` + `ms`; the epoch when either is missing).
    var ended: RecordInstant

    /// Reads a summary; nil without an id.
    init?(json: MacroValue) {
        guard let id = json["id"].intValue, id >= 1 else { return nil }
        self.id = id
        let started = json["started"].stringValue.flatMap(Timestamp.parse) ?? RecordInstant(nanosecondsSinceEpoch: 0)
        ended = started.adding(milliseconds: json["ms"].doubleValue ?? 0)
    }

    /// The mark once this run is exported or skipped.
    var mark: ExportMark { ExportMark(id: id, ended: ended) }
}
