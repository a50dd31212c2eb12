/// Bounds of `macro.profile` and `macro profile`, shared by the daemon, the engine and the thin
/// CLI (which checks `--runs` without the engine).
public enum ProfileLimits {
    /// The largest number of runs of one profile.
    public static let maximumRuns = 100_000

    /// What `macro profile` says when `runs` runs of `name` gave no sample: the sampler takes
    /// about one a millisecond of JavaScript, so it suggests 100 times the runs (at least 1,000,
    /// at most ``maximumRuns``).
    public static func noSamplesMessage(runs: Int, name: String) -> String {
        let more = min(maximumRuns, max(runs * 100, 1000))
        return "no samples: \(runs) run(s) of \(name) took less than the sampler's millisecond in all; try --runs \(more) (at most \(maximumRuns))"
    }
}
