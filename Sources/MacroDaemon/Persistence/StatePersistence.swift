import Logging
import MacroEngineCore
import Synchronization

/// Writes the progress model's values to the state journal before any reply that reports them
/// leaves (the journal holds absolute values, so the last line wins), and makes them durable
/// per the `fsync` policy: at each append (`always`) or at most once per period (`interval`).
final class StatePersistence: Sendable {
    /// Where the values go (folded into the state file over time).
    let journal: StateJournal
    private let model: ProgressModel
    private let settings: SettingsBox
    private let logger: Logger
    private let lastError = Mutex<String?>(nil)

    init(store: StateStore, model: ProgressModel, settings: SettingsBox, logger: Logger) {
        journal = StateJournal(store: store)
        self.model = model
        self.settings = settings
        self.logger = logger
    }

    /// Why the last append failed (nil: it did not), for `engine.status`.
    var stateError: String? { lastError.withLock { $0 } }

    /// Appends the model's current values; fsyncs under `fsync: always`. A failure is logged
    /// once (until an append succeeds again) and reported by ``stateError``. On the engine's loop.
    func append() {
        let durable = settings.read { $0.fsync == .always }
        do {
            try journal.append(model.valuesByName, durable: durable)
            lastError.withLock { $0 = nil }
        } catch {
            let first = lastError.withLock { last -> Bool in
                defer { last = "\(error)" }
                return last == nil
            }
            if first { logger.error("cannot save the state: \(error)") }
        }
    }

    /// For the `interval` policy: fsyncs the journal if a change was written since the last sync.
    func syncIfNeeded() {
        do {
            try journal.sync()
        } catch {
            logger.debug("periodic state sync failed: \(error)")
        }
    }
}
