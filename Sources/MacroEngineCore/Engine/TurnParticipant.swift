/// Native state that changes atomically with JavaScript turns (see
/// ``MacroEngine/addTurnParticipant(_:)``). The methods are called on the engine's loop.
public protocol TurnParticipant: Sendable {
    /// A turn starts: remember the state.
    func beginTurn()
    /// The turn succeeded: keep its changes and tell observers.
    func commitTurn()
    /// The turn failed (threw, rejected, timed out, was cancelled): undo its changes silently.
    func rollbackTurn()
}
