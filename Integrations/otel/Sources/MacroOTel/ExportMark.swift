/// How far the export got: the id of the last run exported (records get increasing ids as runs
/// end) and when that run ended. Catching up exports the kept runs past it; a macrod whose ids
/// went back (records lost to a `kill -9`) is caught up by the end time instead.
public struct ExportMark: Sendable, Equatable {
    /// The last run exported; 0: none.
    public var id: Int
    /// When it ended (0: unknown).
    public var ended: RecordInstant

    /// A mark at run `id`, ended at `ended`.
    public init(id: Int = 0, ended: RecordInstant = RecordInstant(nanosecondsSinceEpoch: 0)) {
        self.id = id
        self.ended = ended
    }

    /// The mark after exporting (or skipping) `run`.
    public init(after run: MacroRun) {
        self.init(id: run.id, ended: run.ended)
    }
}
