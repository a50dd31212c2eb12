/// A native service that publishes functions to JavaScript: the engine calls
/// ``addMacroSupport(engine:)`` once, and the service registers what it wants macros to see.
public protocol MacroEngineSupport {
    /// Registers this object's functions and globals with `engine`.
    func addMacroSupport(engine: MacroEngine) throws
}

extension MacroEngine {
    /// Lets `object` register its functions.
    public func add(_ object: some MacroEngineSupport) throws {
        try object.addMacroSupport(engine: self)
    }
}
