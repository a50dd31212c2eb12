/// Bounds of `macro.profile` and `macro profile`, shared by the daemon, the engine and the thin
/// CLI (which checks `--runs` without the engine).
public enum ProfileLimits {
    /// The largest number of runs of one profile.
    public static let maximumRuns = 100_000
}
