import Logging
import MacroBase
import NIOCore

/// An engine as a configuration describes it: the JavaScriptCore engine with its limits, the
/// progress model registered in it, the state store and the macro library. macrod and
/// `macro --local` both start from this one assembly (then add what is theirs: the daemon its
/// host and transports, the CLI its console and stall guard). Nothing is loaded yet: restore the
/// state with ``restoreState(warnings:)`` and load the macros with the library.
public struct EngineEnvironment {
    /// The configuration it was built from.
    public let config: MacroConfig
    /// The engine.
    public let engine: MacroEngine
    /// The progress model, registered in the engine.
    public let model: ProgressModel
    /// Where the model's values are kept (`state_file`).
    public let store: StateStore
    /// What macros remember (`store`), registered in the engine.
    public let macroStore: MacroStore
    /// Where the stores are kept, beside the state file.
    public let storeJournal: StoreJournal
    /// Every run on the record (`record_runs`), kept beside the state file across restarts.
    public let runs: RunLog
    /// Where ``runs`` are kept while macrod is not running: the state file's path + `.runs.jsonl`.
    public var runsPath: String { store.path + ".runs.jsonl" }
    /// The macro files of `macros_dir`.
    public let library: MacroLibrary

    /// Builds the engine for `config`. `name` labels its thread; `eventLoop`: the loop the
    /// engine runs on (nil: a thread of its own).
    public init(config: MacroConfig, name: String? = nil, eventLoop: (any EventLoop)? = nil, logger: Logger) throws {
        self.config = config
        var configuration = MacroEngine.Configuration(
            timeLimit: config.timeLimit, callDeadline: config.callDeadline, evalEnabled: config.allowEval,
            memoryLimit: config.memoryLimitMB << 20, hardenBuiltins: config.hardenBuiltins)
        if let name { configuration.name = name }
        engine = MacroEngine(configuration: configuration, eventLoop: eventLoop, logger: logger)
        model = ProgressModel(channels: config.channels)
        try engine.add(model)
        store = StateStore(path: config.resolvedStateFile)
        macroStore = MacroStore(limit: config.storeLimitBytes)
        try engine.add(macroStore)
        storeJournal = StoreJournal(stateFile: config.resolvedStateFile)
        runs = RunLog(
            model: model, store: macroStore, limits: RunLog.Limits(perMacro: config.runsKept, failedPerMacro: config.failedRunsKept, bytes: config.runsBytes))
        if config.recordRuns { engine.runLog = runs }
        library = MacroLibrary(
            directory: config.macrosDirectory, engine: engine, logger: logger, triggerLedger: config.resolvedStateFile + ".triggers.json")
    }

    /// Restores the model's saved values (see ``StateStore/restore(into:warnings:)``) and the
    /// macros' stores (``StoreJournal/load(warnings:)``).
    public func restoreState(warnings: inout [StateWarning]) throws -> StateStore.LoadResult {
        let result = try store.restore(into: model, warnings: &warnings)
        macroStore.restore(storeJournal.load(warnings: &warnings))
        return result
    }

    /// Saves the model's values and the stores (the CLI's runs in its own process).
    public func saveState() throws {
        try store.save(model.valuesByName)
        try storeJournal.close(saving: macroStore.all)
    }
}
