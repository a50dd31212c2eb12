import MacroBase

/// A run, while it runs and after: made when the call begins and carried by its `CallContext`,
/// so that its turns and console lines are added without a lock or a lookup. When the call ends
/// the draft is sealed and kept as it is by ``RunLog``: the ``RunRecord`` a reader sees is built
/// from it only when someone reads it, so a run nobody reads costs no copy.
///
/// Written only on the engine's loop and only until ``sealed``; after that the log hands it
/// only to readers holding its lock, which is what lets ``RunLog/Kept`` carry it across threads.
final class RunDraft {
    private(set) var call: Int
    private(set) var macro: String
    private(set) var version: UInt64?
    private var argumentsKept: RunArguments
    /// Its arguments.
    var arguments: [MacroValue] { argumentsKept.values }
    /// Roughly the bytes of its arguments' JSON.
    var argumentsSize: Int { argumentsKept.size }
    /// When it began (uptime nanoseconds): its first turn's start (0 until then).
    var began: UInt64
    /// When it began (wall clock, seconds since 1970): from ``began`` by the log's offset, or
    /// as read back from the file.
    var startedAt: Double
    /// When its last turn ended (uptime nanoseconds, 0: none yet).
    var lastTurnEnded: UInt64 = 0
    /// Who started it (nil: the log's default).
    var origin: String?
    /// The channels' committed values when it began, in channel order: the first four in
    /// place (no array per run; a tuple, not a SIMD vector, whose alignment would make every
    /// draft an aligned allocation), any more after them.
    private var firstValuesBefore: (Double, Double, Double, Double) = (0, 0, 0, 0)
    private var moreValuesBefore: [Double] = []
    private var valuesBeforeCount = 0
    var storeBefore: [String: String]?
    var console: [RunRecord.ConsoleLine] = []
    var consoleDropped = 0
    /// The bytes of the console lines kept.
    private var consoleBytes = 0
    /// The changes its turns made to the rings: the first in place (most runs make one), any more
    /// after it (no array to empty when the draft is reused).
    private var firstChange: RunRecord.Change?
    private var moreChanges: [RunRecord.Change] = []
    /// How many changes it has kept.
    private(set) var changeCount = 0
    var storeChanges: [RunRecord.StoreEdit] = []
    /// Its turns: the first in place (most runs have one), the others after it.
    private var firstTurn: RunRecord.Turn?
    private var moreTurns: [RunRecord.Turn] = []
    var turnsDropped = 0
    var javascriptMs: Double = 0

    // Set once, when it ends (``RunLog/finished(_:outcome:)``).
    /// The record's id.
    var id = 0
    var result: MacroValue?
    /// Its error (nil: none). Whether there is one is ``failed``: a test of the optional itself
    /// would copy the whole error.
    var error: MacroError? {
        didSet { failed = error != nil }
    }
    /// Whether it ended with an error.
    private(set) var failed = false
    var totalMs: Double?
    var bytes = 0
    /// A record read back from the file keeps its own channel names and version text.
    private var channelsRead: [String]?
    private var versionRead: String?
    /// Ended and kept: nothing writes to it any more (a late turn of a timer it left is not its).
    var sealed = false

    init(call: Int, macro: String, version: UInt64?, arguments: [MacroValue], began: UInt64, startedAt: Double) {
        self.call = call
        self.macro = macro
        self.version = version
        argumentsKept = RunArguments(arguments)
        self.began = began
        self.startedAt = startedAt
    }

    /// Makes a kept draft nobody else holds any more (see ``RunLog``'s rings) the draft of a new
    /// run, as ``init(call:macro:version:arguments:began:startedAt:)`` would, keeping the
    /// capacity of its arrays: a run then costs no allocation of its own.
    func reuse(call: Int, macro: String, version: UInt64?, arguments: [MacroValue]) {
        self.call = call
        self.macro = macro
        self.version = version
        argumentsKept = RunArguments(arguments)
        began = 0
        startedAt = 0
        lastTurnEnded = 0
        origin = nil
        // Emptied only when not empty: an empty array's `removeAll(keepingCapacity:)` allocates.
        Self.empty(&moreValuesBefore)
        valuesBeforeCount = 0
        if storeBefore != nil { storeBefore = nil }
        Self.empty(&console)
        consoleDropped = 0
        consoleBytes = 0
        if changeCount != 0 {
            firstChange = nil
            Self.empty(&moreChanges)
            changeCount = 0
        }
        Self.empty(&storeChanges)
        firstTurn = nil
        Self.empty(&moreTurns)
        turnsDropped = 0
        javascriptMs = 0
        id = 0
        result = nil
        if failed { error = nil }
        totalMs = nil
        bytes = 0
        if channelsRead != nil { channelsRead = nil }
        if versionRead != nil { versionRead = nil }
        sealed = false
    }

    private static func empty<Element>(_ array: inout [Element]) {
        if !array.isEmpty { array.removeAll(keepingCapacity: true) }
    }

    /// A finished run's draft holding `record` (one read back from the file, or abandoned),
    /// sealed. Its record gives back `record`.
    convenience init(sealed record: RunRecord) {
        self.init(call: record.call, macro: record.macro, version: nil, arguments: record.arguments, began: 0, startedAt: record.startedAt)
        channelsRead = record.channels
        versionRead = record.version
        origin = record.origin
        for (index, value) in record.values.enumerated() { valueBefore(index, value) }
        storeBefore = record.storeBefore
        console = record.console
        consoleDropped = record.consoleDropped
        for change in record.changes { add(change) }
        storeChanges = record.storeChanges
        for turn in record.turns { add(turn) }
        turnsDropped = record.turnsDropped
        javascriptMs = record.javascriptMs
        id = record.id
        result = record.result
        error = record.error
        totalMs = record.totalMs
        bytes = record.bytes
        sealed = true
    }

    /// The value of channel `index` when it began (indexes from 0, in order).
    func valueBefore(_ index: Int, _ value: Double) {
        switch index {
        case 0: firstValuesBefore.0 = value
        case 1: firstValuesBefore.1 = value
        case 2: firstValuesBefore.2 = value
        case 3: firstValuesBefore.3 = value
        default: moreValuesBefore.append(value)
        }
        valuesBeforeCount = index + 1
    }

    /// The channels' values when it began, in channel order.
    var valuesBefore: [Double] {
        let first = [firstValuesBefore.0, firstValuesBefore.1, firstValuesBefore.2, firstValuesBefore.3]
        return first.prefix(valuesBeforeCount) + moreValuesBefore
    }

    /// A change of a ring, in order.
    func add(_ change: RunRecord.Change) {
        if firstChange == nil { firstChange = change } else { moreChanges.append(change) }
        changeCount += 1
    }

    /// Its changes of the rings, in order.
    var changes: [RunRecord.Change] { firstChange.map { [$0] + moreChanges } ?? [] }

    /// How many turns it has kept.
    var turnCount: Int { firstTurn == nil ? 0 : 1 + moreTurns.count }

    /// A turn of the run.
    func add(_ turn: RunRecord.Turn) {
        if firstTurn == nil { firstTurn = turn } else { moreTurns.append(turn) }
    }

    /// A console line of the run (the first ``RunLog/consoleLines`` are kept, up to
    /// ``RunLog/consoleBytesKept`` of their text; the rest are counted).
    func console(level: String, message: String) {
        guard !sealed else { return }
        let bytes = message.utf8.count
        if console.count < RunLog.consoleLines, consoleBytes + bytes <= RunLog.consoleBytesKept {
            console.append(RunRecord.ConsoleLine(level: level, message: message))
            consoleBytes += bytes
        } else {
            consoleDropped += 1
        }
    }

    /// Its record: `channels` are the names of ``valuesBefore``'s values, `origin` the one who
    /// started it when nobody said.
    func record(channels: [String], defaultOrigin: String) -> RunRecord {
        var record = RunRecord(
            id: id, call: call, macro: macro, version: versionRead ?? version.map { String($0, radix: 16) }, origin: origin ?? defaultOrigin,
            startedAt: startedAt, arguments: arguments, channels: channelsRead ?? channels, values: valuesBefore, storeBefore: storeBefore)
        record.console = console
        record.consoleDropped = consoleDropped
        record.changes = changes
        record.storeChanges = storeChanges
        record.turns = firstTurn.map { [$0] + moreTurns } ?? []
        record.turnsDropped = turnsDropped
        record.javascriptMs = javascriptMs
        record.totalMs = totalMs
        record.result = result
        record.error = error
        record.bytes = bytes
        return record
    }
}
