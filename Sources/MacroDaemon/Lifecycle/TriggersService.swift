import MacroEngineCore

/// The macros' triggers: armed once the files are loaded (the watch service started before
/// it), disarmed first when macrod stops, before the loops they are timed on go.
final class TriggersService: DaemonService {
    private let library: MacroLibrary
    private let model: ProgressModel

    /// Arms `library`'s triggers, with `model`'s changes for the watchers.
    init(library: MacroLibrary, model: ProgressModel) {
        self.library = library
        self.model = model
    }

    /// Arms every trigger and fires the `on: "start"` ones.
    func start() { library.activateTriggers(observing: model) }

    /// Disarms them: no run starts from now on.
    func stop() async { library.triggers.stop() }
}
