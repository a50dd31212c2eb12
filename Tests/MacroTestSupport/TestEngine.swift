import Foundation
import Logging
import MacroEngineCore
import Synchronization

/// Collects what the engine reports to its exception handler.
public final class ErrorRecorder: Sendable {
    private let errors = Mutex<[MacroError]>([])
    /// Creates an empty recorder.
    public init() {}
    /// Everything recorded so far.
    public var recorded: [MacroError] { errors.locked { $0 } }
    /// Records one error.
    public func record(_ error: MacroError) { errors.locked { $0.append(error) } }
}

/// A logger that drops everything (tests assert on values, not on log noise).
public let silentLogger = Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }

/// An engine with the demo's progress model (inner, middle, outer) installed and errors recorded.
public func makeEngine(
    channels: [ProgressChannel] = ProgressChannel.rings, timeLimit: Duration = .seconds(5), evalEnabled: Bool = false
) throws -> (engine: MacroEngine, model: ProgressModel, errors: ErrorRecorder) {
    let engine = MacroEngine(configuration: .init(timeLimit: timeLimit, evalEnabled: evalEnabled), logger: silentLogger)
    let recorder = ErrorRecorder()
    engine.exceptionHandler = { recorder.record($0) }
    let model = ProgressModel(channels: channels)
    try engine.add(model)
    return (engine, model, recorder)
}

/// The call of macro `name` once `engine` lists it as running (looking every 5 ms, for at most
/// `seconds`): a call started on the engine's loop is in the list once its turn began.
public func runningCall(_ engine: MacroEngine, _ name: String, within seconds: Double = 10) throws -> RunningCall {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if let call = engine.runningCalls.first(where: { $0.macro == name }) { return call }
        Thread.sleep(forTimeInterval: 0.005)
    }
    throw MacroError(code: .noSuchMacro, message: "\(name) never showed up as running")
}
