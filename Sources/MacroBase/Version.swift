/// The product version, printed by `macro --version`, `macrod --version` and `engine.status`.
public enum MacroEngineVersion {
    /// The version string.
    public static let string = "0.2.0"
}
