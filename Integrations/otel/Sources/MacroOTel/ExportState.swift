/// The service's mark and its state file: saved at most once a second while exporting, and at
/// the end.
struct ExportState {
    var mark = ExportMark()
    let stateFile: StateFile?
    private(set) var exportedCount = 0
    private var dirty = false
    private var lastSave = ContinuousClock.now

    init(stateFile: StateFile?) {
        self.stateFile = stateFile
    }

    /// `run`'s span was handed to the tracer.
    mutating func exported(_ run: MacroRun) {
        mark = ExportMark(after: run)
        exportedCount += 1
        dirty = true
    }

    /// The feed moved the mark without a span.
    mutating func moved(to mark: ExportMark) {
        self.mark = mark
        dirty = true
    }

    /// Saves the mark when it changed and a second has passed since the last save.
    mutating func saveIfDue() throws(ExportError) {
        guard dirty, ContinuousClock.now - lastSave >= .seconds(1) else { return }
        try save()
    }

    /// Saves the mark when it changed.
    mutating func save() throws(ExportError) {
        guard dirty, let stateFile else { return }
        try stateFile.save(mark)
        dirty = false
        lastSave = ContinuousClock.now
    }
}
