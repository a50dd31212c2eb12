import Synchronization

/// A JavaScript function kept by source: it holds the source text, re-registers
/// the global `key` when the source changes, and calls the version it holds.
///
/// A change that does not load (syntax error, not a function) keeps the previous version live;
/// the error is in ``lastError`` and goes to the engine's exception handler.
public final class MacroMethod: Sendable {
    /// The engine the method lives in.
    public let engine: MacroEngine
    /// The global name.
    public let key: String
    /// The file the source came from (used in error positions).
    public let file: String
    private let state: Mutex<State>

    private struct State {
        var javascript: String
        var function: MacroFunction?
        var lastError: MacroError?
        var version = 0
        /// The source of the live version (``javascript`` may be a later one that did not load).
        var liveJavaScript: String?
    }

    /// Creates the method and registers it. A source that does not load leaves the method without
    /// a function: ``call(_:timeLimit:)`` then throws that error. The engine is passed in (an
    /// embedder that wants the singleton passes ``MacroEngine/shared``): nothing reaches for it
    /// by default.
    public init(javascript: String, key: String, file: String? = nil, engine: MacroEngine) {
        self.engine = engine
        self.key = key
        self.file = file ?? "\(key).js"
        self.state = Mutex(State(javascript: javascript))
        self.reportsErrors = true
        _ = try? update(javascript: javascript)
    }

    /// A method whose load errors its owner reports (the library logs each once, with its entry).
    init(javascript: String, key: String, file: String, engine: MacroEngine, reportsErrors: Bool) {
        self.engine = engine
        self.key = key
        self.file = file
        self.state = Mutex(State(javascript: javascript))
        self.reportsErrors = reportsErrors
        _ = try? update(javascript: javascript)
    }

    /// Whether a version that does not load goes to the engine's exception handler too.
    private let reportsErrors: Bool

    /// The source. Setting it re-registers the function (see ``update(javascript:)``).
    public var javascript: String {
        get { state.locked { $0.javascript } }
        set { _ = try? update(javascript: newValue) }
    }

    /// The error of the last change that did not load, nil once a change loads.
    public var lastError: MacroError? { state.locked { $0.lastError } }
    /// Counts the versions that loaded (1 after the first good source).
    public var version: Int { state.locked { $0.version } }
    /// The live version's function, nil when none ever loaded.
    public var liveFunction: MacroFunction? { state.locked { $0.function } }

    /// True when a version is live.
    public var isLoaded: Bool { state.locked { $0.function != nil } }

    /// The source of the live version, nil when none ever loaded.
    var liveJavaScript: String? { state.locked { $0.liveJavaScript } }

    /// Replaces the source and re-registers. On failure the previous version stays live and the
    /// error is thrown (and kept in ``lastError``).
    @discardableResult
    public func update(javascript: String) throws -> Int {
        do {
            let function = try engine.setMethod(javascript: javascript, key: key, file: file, report: reportsErrors)
            return state.locked { state in
                state.javascript = javascript
                state.liveJavaScript = javascript
                state.function = function
                state.lastError = nil
                state.version += 1
                return state.version
            }
        } catch let error as MacroError {
            state.locked { state in
                state.javascript = javascript
                state.lastError = error
                // setMethod replaced nothing; put the previous version back under the global name.
            }
            throw error
        }
    }

    /// A version made but not yet live (see ``prepare(javascript:)``).
    struct Prepared: Sendable {
        let javascript: String
        let function: MacroFunction
        let imports: [String]
    }

    /// Makes a version from `javascript` without making it live: a module reload prepares every
    /// dependent, then ``commit(_:runtime:)``s them all or none.
    func prepare(javascript: String) throws -> Prepared {
        let made = try engine.prepareMethod(javascript: javascript, key: key, file: file)
        return Prepared(javascript: javascript, function: made.function, imports: made.imports)
    }

    /// Makes a prepared version live (on the engine's loop); returns the new version number.
    func commit(_ prepared: Prepared, runtime: JSRuntime) throws -> Int {
        try engine.install(prepared.function, key: key, file: file, javascript: prepared.javascript, imports: prepared.imports, runtime: runtime)
        return state.locked { state in
            // A later text of the file that did not load stays the one reported.
            if state.javascript == prepared.javascript { state.lastError = nil }
            state.liveJavaScript = prepared.javascript
            state.function = prepared.function
            state.version += 1
            return state.version
        }
    }

    /// Calls the live version. Throws its error, `.timeout`, or — when no version ever loaded —
    /// the load error.
    @discardableResult
    public func call(_ arguments: [MacroValue], timeLimit: Duration? = nil) throws -> MacroValue {
        let (function, error) = state.locked { ($0.function, $0.lastError) }
        guard let function else {
            throw error ?? MacroError(code: .noSuchMacro, message: "macro '\(key)' is not loaded", macro: key, file: file)
        }
        return try function.call(arguments, timeLimit: timeLimit)
    }

    /// Calls the live version with variadic arguments.
    @discardableResult
    public func call(_ arguments: MacroValue...) throws -> MacroValue { try call(arguments) }
}
