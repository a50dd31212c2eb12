import MacroBase

/// A run's record while it runs: made when the call begins and carried by its `CallContext`, so
/// that its turns and console lines are added without a lock or a lookup; it becomes a
/// ``RunRecord`` when the call ends. Confined to the engine's loop, like the call.
final class RunDraft {
    let call: Int
    let macro: String
    let version: UInt64?
    let arguments: [MacroValue]
    /// When it began (uptime nanoseconds).
    let began: UInt64
    /// Who started it (nil: the log's default).
    var origin: String?
    /// The channels' committed values, in channel order.
    var valuesBefore: [Double] = []
    var storeBefore: [String: String]?
    var console: [RunRecord.ConsoleLine] = []
    var consoleDropped = 0
    var changes: [RunRecord.Change] = []
    var storeChanges: [RunRecord.StoreEdit] = []
    var turns: [RunRecord.Turn] = []
    var turnsDropped = 0
    var javascriptMs: Double = 0

    init(call: Int, macro: String, version: UInt64?, arguments: [MacroValue], began: UInt64) {
        self.call = call
        self.macro = macro
        self.version = version
        self.arguments = arguments
        self.began = began
    }

    /// A console line of the run (the first ``RunLog/consoleLines`` are kept).
    func console(level: String, message: String) {
        if console.count < RunLog.consoleLines { console.append(RunRecord.ConsoleLine(level: level, message: message)) } else { consoleDropped += 1 }
    }

    /// The record, without its outcome and id (the log sets them).
    func record(startedAt: Double, totalMs: Double, channels: [String]) -> RunRecord {
        var record = RunRecord(
            id: 0, call: call, macro: macro, version: version.map { String($0, radix: 16) }, origin: origin ?? "", startedAt: startedAt,
            arguments: arguments, channels: channels, values: valuesBefore, storeBefore: storeBefore)
        record.console = console
        record.consoleDropped = consoleDropped
        record.changes = changes
        record.storeChanges = storeChanges
        record.turns = turns
        record.turnsDropped = turnsDropped
        record.javascriptMs = javascriptMs
        record.totalMs = totalMs
        return record
    }
}
