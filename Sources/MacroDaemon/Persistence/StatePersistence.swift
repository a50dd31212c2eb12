import Foundation
import Logging
import MacroEngineCore
import Synchronization

/// Writes the progress model's values to the state journal, and the macros' store changes to
/// the store journal, before any reply that reports them leaves (the state journal holds absolute
/// values, so the last line wins; the store journal, each commit's changes in order), and makes
/// them durable per the `fsync` policy: at each append (`always`) or at most once per period
/// (`interval`).
final class StatePersistence: Sendable {
    /// Where the values go (folded into the state file over time).
    let journal: StateJournal
    /// Where the stores' changes go (folded into the store snapshot over time).
    let storeJournal: StoreJournal
    private let model: ProgressModel
    /// The stores whose changes are journaled.
    let macroStore: MacroStore
    /// The run records, saved at shutdown and before an engine restart (``saveRuns()``).
    let runs: RunLog
    private let runsPath: String
    /// The values last appended (nil: none yet): a commit that changed only a store does not
    /// write the same values again.
    private let appended = Mutex<[String: Double]?>(nil)
    private let settings: SettingsBox
    private let logger: Logger
    private let lastError = Mutex<String?>(nil)

    init(environment: EngineEnvironment, settings: SettingsBox, logger: Logger) {
        journal = StateJournal(store: environment.store)
        storeJournal = environment.storeJournal
        model = environment.model
        macroStore = environment.macroStore
        macroStore.recordChanges()
        runs = environment.runs
        runsPath = environment.runsPath
        self.settings = settings
        self.logger = logger
    }

    /// Why the state cannot be saved, as the start-up check or the last append found it (nil:
    /// it can), for `engine.status`.
    var stateError: String? { lastError.withLock { $0 } }

    /// At start: opens the journal and checks that the state file's directory may be written,
    /// so that a location that cannot be written is reported (``stateError``, and a warning in
    /// the log) before the first change rather than at it. Calls go on either way.
    func checkWritable() {
        var problem: String?
        do {
            try journal.prepare()
            try storeJournal.prepare()
            let directory = (journal.store.path as NSString).deletingLastPathComponent
            let dir = directory.isEmpty ? "." : directory
            if access(dir, W_OK) != 0 {
                problem = "the state file \(journal.store.path) cannot be replaced: its directory \(dir) is not writable (\(String(cString: strerror(errno))))"
            }
        } catch {
            problem = Self.describe(error)
        }
        guard let problem else { return }
        lastError.withLock { $0 = problem }
        logger.warning(
            "cannot save the state: \(problem); found at start. Calls go on; their values are kept in memory only, until the state location can be written (engine.status: stateError)"
        )
    }

    /// Appends the model's current values (when they differ from the last appended) and the
    /// stores' committed changes; fsyncs under `fsync: always`. A failure is logged once (until
    /// an append succeeds again) and reported by ``stateError``. On the engine's loop.
    func append() {
        let durable = settings.read { $0.fsync == .always }
        do {
            let values = model.valuesByName
            if appended.withLock({ $0 != values }) {
                try journal.append(values, durable: durable)
                appended.withLock { $0 = values }
            }
            let changes = macroStore.takeUnjournaled()
            if !changes.isEmpty { try storeJournal.append(changes, store: macroStore, durable: durable) }
            lastError.withLock { $0 = nil }
        } catch {
            let first = lastError.withLock { last -> Bool in
                defer { last = Self.describe(error) }
                return last == nil
            }
            if first { logger.error("cannot save the state: \(Self.describe(error))") }
        }
    }

    /// An error as the log and `stateError` show it: a ``MacroError``'s message names the file
    /// already (its `file: error:` prefix would say it twice).
    static func describe(_ error: any Error) -> String {
        (error as? MacroError)?.message ?? "\(error)"
    }

    /// At shutdown: writes the values and the stores as their snapshots, durably, and removes
    /// the journals. Throws what could not be saved.
    func close() throws {
        try journal.close(saving: model.valuesByName)
        try storeJournal.close(saving: macroStore.all)
        saveRuns()
    }

    /// Writes the run records beside the state file, for the next process (a restart, a stop);
    /// a failure is logged, never fatal.
    func saveRuns() {
        do {
            try runs.save(to: runsPath)
        } catch {
            logger.warning("cannot keep the run records: \(Self.describe(error)); the next process starts without them")
        }
    }

    /// For the `interval` policy: fsyncs the journal if a change was written since the last sync.
    func syncIfNeeded() {
        do {
            try journal.sync()
            try storeJournal.sync()
        } catch {
            logger.debug("periodic state sync failed: \(error)")
        }
    }
}
