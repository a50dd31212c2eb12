import Dispatch
import Logging
import MacroEngineCore
import Synchronization

/// Collects what the engine reports to its exception handler.
public final class ErrorRecorder: Sendable {
    private let errors = Mutex<[MacroError]>([])
    private let arrived = DispatchSemaphore(value: 0)
    /// Creates an empty recorder.
    public init() {}
    /// Everything recorded so far.
    public var recorded: [MacroError] { errors.locked { $0 } }
    /// Records one error.
    public func record(_ error: MacroError) {
        errors.locked { $0.append(error) }
        arrived.signal()
    }

    /// Waits until at least `count` errors were recorded (`seconds` at most) and returns them all.
    public func waitFor(_ count: Int = 1, seconds: Double = 5) -> [MacroError] {
        let deadline = DispatchTime.now() + seconds
        while recorded.count < count, arrived.wait(timeout: deadline) == .success {}
        return recorded
    }
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

/// The call of macro `name` once `engine` lists it as running (within `timeout`): a call started
/// on the engine's loop is in the list once its turn began. Asked, not announced (see
/// ``eventually(timeout:_:)``): a call whose source is what a test checks cannot say it runs.
public func runningCall(_ engine: MacroEngine, _ name: String, timeout: Duration = .seconds(10)) throws -> RunningCall {
    guard let call = eventually(timeout: timeout, { engine.runningCalls.first { $0.macro == name } }) else {
        throw MacroError(code: .noSuchMacro, message: "\(name) never showed up as running")
    }
    return call
}
