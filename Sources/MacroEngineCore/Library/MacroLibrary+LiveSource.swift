/// What the version history reads from the library: the source each live version ran, and
/// whether the first full load is done.
extension MacroLibrary {
    /// The source of the live version of `name` (a macro, or a lib file as `lib/NAME`): what its
    /// last successful load ran; nil when no version of it is live.
    public func liveSource(of name: String) -> String? {
        if name.hasPrefix("lib/") {
            guard libState.locked({ $0[name] })?.version ?? 0 > 0 else { return nil }
            return libSources.locked { $0[name] }
        }
        return state.locked { $0[name]?.method }?.liveJavaScript
    }

    /// The path of entry `name`'s file: `DIR/NAME.js`, or `DIR/lib/NAME.js` for `lib/NAME`.
    public func file(ofEntry name: String) -> String { path(ofEntry: name) }

    /// True once the first full load (``reload()``) is done: from then on a change is news.
    public var hasLoadedOnce: Bool { startedUp.load(ordering: .relaxed) }
}
