/// What a connection to macrod hands the exporter, in order.
public enum FeedEvent: Sendable {
    /// Connected and subscribed to `runs`; catching up follows.
    case connected
    /// A recorded run to export.
    case run(MacroRun)
    /// Move the mark without exporting: a record rolled off or unreadable (logged), or the runs
    /// kept before a `--skip-existing` start.
    case skip(ExportMark)
    /// macrod's run ids went back (its records since its last stop were lost): the mark starts
    /// again from this one.
    case reset(ExportMark)
    /// Caught up: every kept run past the mark has been handed over (`count` of them).
    case caughtUp(count: Int)
}
