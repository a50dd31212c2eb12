/// A JavaScript function held from Swift: what ``MacroValue/function(_:)`` carries. The engine
/// makes them (MacroEngineCore's `MacroFunction`, which protects the JS object and calls it on
/// the engine's thread); this module only carries them, so that values, their JSON and the wire
/// protocol need no JavaScriptCore.
public protocol MacroCallable: AnyObject, Sendable, CustomStringConvertible {
    /// The function's `name` property when it was converted.
    var name: String { get }

    /// Calls the function with `this` undefined, under the engine's time limit (or `timeLimit`).
    /// Throws a ``MacroError`` when it throws or times out.
    func call(_ arguments: [MacroValue], timeLimit: Duration?) throws -> MacroValue

    /// True when `other` holds the same JavaScript function (two conversions of one function
    /// are the same).
    func isSame(as other: any MacroCallable) -> Bool
}

extension MacroCallable {
    /// Calls the function with variadic arguments, under the engine's time limit.
    @discardableResult
    public func call(_ arguments: MacroValue...) throws -> MacroValue { try call(arguments, timeLimit: nil) }
}
