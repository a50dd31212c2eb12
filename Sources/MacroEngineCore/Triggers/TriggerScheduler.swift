import Foundation
import Logging
import NIOCore
import OrderedCollections
import Synchronization

/// Runs macros by themselves: arms each macro's declared triggers (``TriggerDeclaration``),
/// applies its run mode when a trigger fires while a triggered run is going, and keeps what a
/// person asks of it: next fire times, last runs, counts. Engine state, owned by the
/// ``MacroLibrary`` whose macros it runs; a run is a call like any other (limits, rollback,
/// cancel, quarantine), started through `run`.
public final class TriggerScheduler: Sendable {
    /// What happened, for notifications, statistics and the log.
    public enum Event: Sendable {
        /// A run started (`call` is its call id).
        case started(macro: String, call: Int, event: MacroValue)
        /// A fire was dropped by the run mode (or the trigger is paused).
        case dropped(macro: String, kind: String, reason: String)
        /// A run ended.
        case finished(macro: String, call: Int, kind: String, milliseconds: Double, result: Result<MacroValue, MacroError>)
    }

    /// Why a fire did not start a run, or the run's call id.
    public enum FireOutcome: Sendable, Equatable {
        case started(call: Int)
        case queued
        case dropped(reason: String)
    }

    private struct LastRun: Sendable {
        var at: Date
        var milliseconds: Double
        var ok: Bool
        var summary: String
    }

    private struct Armed: Sendable {
        var declaration: TriggerDeclaration
        var pausedReason: String?
        var timers: [Int: any TriggerTimer] = [:]
        var next: [Int: Date] = [:]
        var running: [Int: String] = [:]  // call id -> trigger kind
        var queue: [MacroValue] = []
        var fired = 0, dropped = 0, failed = 0, completed = 0
        var firedByKind: [String: Int] = [:]
        var lastRun: LastRun?
        var lastFireTimes: [Date] = []
        var debounce: [Int: (timer: any TriggerTimer, old: Double, new: Double)] = [:]
        var lastCron: [Int: Date] = [:]
        var watchPausedUntil: Date?
    }

    private let clock: any TriggerClock
    private let logger: Logger
    private let run: @Sendable (String, MacroValue, Int) -> EventLoopFuture<MacroValue>
    private let cancel: @Sendable (Int) -> Void
    private let reserveCallID: @Sendable () -> Int
    /// Why JavaScript is paused (the engine's restart budget ran out), nil while it runs.
    private let javascriptPaused: @Sendable () -> String?
    /// Where runs start and cancels land, in order (the engine's loop): a cancel of a run that
    /// was just started then finds it.
    private let perform: @Sendable (@escaping @Sendable () -> Void) -> Void
    private let state = Mutex<[String: Armed]>([:])
    private let listener = Mutex<CallbackBox<@Sendable (Event) -> Void>?>(nil)
    private let sequence = Atomic<Int>(0)
    /// Where the last fire of each schedule that runs missed fires is kept (nil: not kept).
    private let ledgerPath: String?
    private let ledger: Mutex<[String: Double]>

    /// Off until ``activate(observing:)``: declarations are kept, nothing is armed (a CLI run
    /// in-process loads the same files and must not start schedules).
    private let active = Atomic<Bool>(false)
    private let observer = Mutex<(model: ProgressModel, token: ProgressObserverToken)?>(nil)
    /// How many `watch` triggers are declared: with none, a committed change costs the call
    /// path one atomic load, not a task on the loop.
    private let watchers = Atomic<Int>(0)
    /// The `watch` triggers by the channel they watch, in macro order (``countWatchers()``).
    private let watchIndex = Mutex<[String: [(macro: String, index: Int)]]>([:])

    /// A watcher that fires more than this many times in one second pauses for a second.
    public static let watchRateLimit = 20

    /// A scheduler whose runs start with `run(macro, event, callID)`, cancelled with `cancel`.
    public init(
        clock: any TriggerClock, logger: Logger, ledgerPath: String? = nil, reserveCallID: @escaping @Sendable () -> Int,
        perform: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void = { $0() },
        javascriptPaused: @escaping @Sendable () -> String? = { nil },
        run: @escaping @Sendable (String, MacroValue, Int) -> EventLoopFuture<MacroValue>, cancel: @escaping @Sendable (Int) -> Void
    ) {
        self.perform = perform
        self.javascriptPaused = javascriptPaused
        self.clock = clock
        self.logger = logger
        self.run = run
        self.cancel = cancel
        self.reserveCallID = reserveCallID
        self.ledgerPath = ledgerPath
        var saved: [String: Double] = [:]
        if let ledgerPath, let data = FileManager.default.contents(atPath: ledgerPath),
            case .object(let fields)? = try? JSONParser.parse(data)
        {
            for (key, value) in fields { if let number = value.doubleValue { saved[key] = number } }
        }
        ledger = Mutex(saved)
    }

    /// Told of every ``Event`` (on the thread it happens on).
    public func onEvent(_ body: (@Sendable (Event) -> Void)?) { listener.withLock { $0 = body.map { CallbackBox($0) } } }

    private func tell(_ event: Event) { listener.withLock { $0 }?.call(event) }

    // MARK: Declarations

    /// Arms `macro`'s triggers (nil or none: disarms it), replacing what it had. Counts and the
    /// last run stay across a reload.
    public func set(_ macro: String, _ declaration: TriggerDeclaration?) {
        let old = state.withLock { state -> Armed? in
            guard let declaration, !declaration.triggers.isEmpty else { return state.removeValue(forKey: macro) }
            let previous = state[macro]
            var armed = previous ?? Armed(declaration: declaration)
            armed.declaration = declaration
            armed.timers = [:]
            armed.next = [:]
            armed.debounce = [:]
            state[macro] = armed
            return previous
        }
        countWatchers()
        if let old { for timer in old.timers.values { timer.cancel() }; for pending in old.debounce.values { pending.timer.cancel() } }
        guard let declaration, active.load(ordering: .relaxed) else { return }
        for (index, trigger) in declaration.triggers.enumerated() { arm(macro, index, trigger, catchingUp: true) }
    }

    /// Arms every declared trigger, watches `model`'s committed changes (`owner` names the macro
    /// whose code is running, whose own watchers a change does not fire), and fires the
    /// `on: "start"` triggers. The daemon calls it once its files are loaded.
    public func activate(
        observing model: ProgressModel?, owner: @escaping @Sendable () -> String? = { nil },
        later: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void = { $0() }
    ) {
        guard !active.exchange(true, ordering: .relaxed) else { return }
        if let model {
            // Told inside the turn that made the change (as it commits): who made it is read
            // now; the runs start after the turn.
            let token = model.addObserver { [weak self] change in
                guard let scheduler = self, scheduler.watchers.load(ordering: .relaxed) > 0 else { return }
                let by = owner()
                later { scheduler.progressChanged(channel: change.channel, old: change.oldValue, new: change.newValue, owner: by) }
            }
            observer.withLock { $0 = (model, token) }
        }
        let declared = state.withLock { state in state.map { ($0.key, $0.value.declaration) } }
        for (macro, declaration) in declared.sorted(by: { $0.0 < $1.0 }) {
            for (index, trigger) in declaration.triggers.enumerated() { arm(macro, index, trigger, catchingUp: true) }
        }
        engineStarted()
    }

    /// Rebuilds the index of `watch` triggers by channel (a declaration changed): a committed
    /// change then looks up its channel's watchers, instead of sorting every macro's triggers.
    private func countWatchers() {
        let index = state.withLock { state in
            var index: [String: [(macro: String, index: Int)]] = [:]
            for (macro, armed) in state.sorted(by: { $0.key < $1.key }) {
                for (position, trigger) in armed.declaration.triggers.enumerated() {
                    if case .watch(let channel, _, _, _) = trigger.kind { index[channel, default: []].append((macro, position)) }
                }
            }
            return index
        }
        watchIndex.withLock { $0 = index }
        watchers.store(index.values.reduce(0) { $0 + $1.count }, ordering: .relaxed)
    }

    /// Pauses `macro`'s triggers (`reason`, for display) or, with nil, resumes them.
    public func pause(_ macro: String, reason: String?) {
        // Told when it changes, and only for a macro that has triggers.
        let change = state.withLock { state -> (was: String?, now: String?)? in
            guard var armed = state[macro], !armed.declaration.triggers.isEmpty, armed.pausedReason != reason else { return nil }
            let was = armed.pausedReason
            armed.pausedReason = reason
            state[macro] = armed
            return (was, reason)
        }
        guard let change else { return }
        if change.now == nil {
            logger.info("triggers of \(macro) resume")
        } else if change.was == nil {
            logger.notice("triggers of \(macro) pause: \(change.now?.split(separator: ":").first.map(String.init) ?? "") (macro triggers says why)")
        }
    }

    /// The macros that have triggers.
    public var macros: [String] { state.withLock { Array($0.keys).sorted() } }

    // MARK: Schedules

    private func arm(_ macro: String, _ index: Int, _ trigger: TriggerDeclaration.Trigger, catchingUp: Bool) {
        guard active.load(ordering: .relaxed) else { return }
        let now = clock.now
        let key = "\(macro)#\(index)"
        let next: Date
        switch trigger.kind {
        case .every(let interval):
            next = now.addingTimeInterval(interval.seconds)
            if catchingUp, trigger.runMissed, let last = ledger.withLock({ $0[key] }).map(Date.init(timeIntervalSince1970:)),
                last.addingTimeInterval(interval.seconds) < now
            {
                fireSoon(macro, index, event: ["kind": "every", "missed": true, "scheduled": .string(Self.iso(last.addingTimeInterval(interval.seconds)))])
            }
        case .cron(let schedule, let zone):
            let previous = state.withLock { $0[macro]?.lastCron[index] }
            guard let found = schedule.next(after: now, in: zone, previous: previous) else {
                logger.warning("\(macro): cron '\(schedule.text)' never matches; not armed")
                return
            }
            next = found
            if catchingUp, trigger.runMissed, let last = ledger.withLock({ $0[key] }).map(Date.init(timeIntervalSince1970:)),
                let missed = schedule.next(after: last, in: zone), missed < now
            {
                fireSoon(macro, index, event: ["kind": "cron", "missed": true, "scheduled": .string(Self.iso(missed))])
            }
        default:
            return
        }
        let delay = Duration.nanoseconds(Int64(max(0, next.timeIntervalSince(now)) * 1e9))
        let timer = clock.schedule(after: delay) { [weak self] in self?.scheduleFired(macro, index, at: next) }
        state.withLock { state in
            state[macro]?.timers[index] = timer
            state[macro]?.next[index] = next
        }
    }

    private func fireSoon(_ macro: String, _ index: Int, event: MacroValue) {
        _ = clock.schedule(after: .zero) { [weak self] in _ = self?.fire(macro, event: event, trigger: index) }
    }

    private func scheduleFired(_ macro: String, _ index: Int, at scheduled: Date) {
        guard
            let trigger = state.withLock({ state -> TriggerDeclaration.Trigger? in
                guard let armed = state[macro], armed.declaration.triggers.indices.contains(index) else { return nil }
                if case .cron = armed.declaration.triggers[index].kind { state[macro]?.lastCron[index] = scheduled }
                return armed.declaration.triggers[index]
            })
        else { return }
        if trigger.runMissed {
            ledger.withLock { $0["\(macro)#\(index)"] = scheduled.timeIntervalSince1970 }
            saveLedger()
        }
        var fields: OrderedDictionaryBox = ["kind": .string(trigger.kindName), "scheduled": .string(Self.iso(scheduled))]
        if case .cron(let schedule, let zone) = trigger.kind {
            fields["cron"] = .string(schedule.text)
            fields["tz"] = .string(zone.identifier)
        }
        let event = MacroValue.object(fields)
        _ = fire(macro, event: event, trigger: index)
        arm(macro, index, trigger, catchingUp: false)
    }

    private func saveLedger() {
        guard let ledgerPath else { return }
        let fields = ledger.withLock { $0 }.mapValues { MacroValue.number($0) }
        let text = MacroValue.object(.init(uniqueKeysWithValues: fields.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })).jsonText(pretty: false)
        let temporary = ledgerPath + ".tmp"
        if FileManager.default.createFile(atPath: temporary, contents: Data(text.utf8)) { rename(temporary, ledgerPath) }
    }

    // MARK: Lifecycle and watchers

    /// Fires every `on: "start"` trigger (the engine started: the daemon, or a stall restart).
    public func engineStarted() {
        for (macro, index) in matching({ if case .start = $0 { true } else { false } }) {
            _ = fire(macro, event: ["kind": "start"], trigger: index)
        }
    }

    /// Fires the `on: "reload"` trigger of each of `macros` (they use `module`, just reloaded).
    public func modulesReloaded(_ macros: [String], module: String) {
        let wanted = Set(macros)
        for (macro, index) in matching({ if case .reload = $0 { true } else { false } }) where wanted.contains(macro) {
            _ = fire(macro, event: ["kind": "reload", "module": .string(module)], trigger: index)
        }
    }

    /// A committed change of `channel` from `old` to `new`; `owner` is the macro whose code made
    /// it (its own watchers do not fire for it: a watcher that writes what it watches would
    /// loop).
    public func progressChanged(channel: String, old: Double, new: Double, owner: String?) {
        let seq = sequence.add(1, ordering: .relaxed).newValue
        for (macro, index) in watchIndex.withLock({ $0[channel] ?? [] }) {
            guard macro != owner else {
                tell(.dropped(macro: macro, kind: "watch", reason: "its own change of \(channel)"))
                continue
            }
            guard let trigger = state.withLock({ $0[macro]?.declaration.triggers[index] }),
                case .watch(_, let above, let below, let debounce) = trigger.kind
            else { continue }
            if let above, !(new > above) { continue }
            if let below, !(new < below) { continue }
            let event: MacroValue = ["kind": "watch", "channel": .string(channel), "old": .number(old), "new": .number(new), "seq": .number(Double(seq))]
            guard let debounce else {
                _ = fire(macro, event: event, trigger: index)
                continue
            }
            let timer = clock.schedule(after: debounce) { [weak self] in self?.debounced(macro, index, channel: channel) }
            let replaced = state.withLock { state -> (any TriggerTimer)? in
                let previous = state[macro]?.debounce[index]
                state[macro]?.debounce[index] = (timer, previous?.old ?? old, new)
                return previous?.timer
            }
            replaced?.cancel()
        }
    }

    private func debounced(_ macro: String, _ index: Int, channel: String) {
        guard let pending = state.withLock({ $0[macro]?.debounce.removeValue(forKey: index) }) else { return }
        let seq = sequence.load(ordering: .relaxed)
        _ = fire(
            macro, event: ["kind": "watch", "channel": .string(channel), "old": .number(pending.old), "new": .number(pending.new), "seq": .number(Double(seq))], trigger: index)
    }

    private func matching(_ test: (TriggerDeclaration.Trigger.Kind) -> Bool) -> [(String, Int)] {
        state.withLock { state in
            state.sorted { $0.key < $1.key }.flatMap { macro, armed in
                armed.declaration.triggers.enumerated().filter { test($0.element.kind) }.map { (macro, $0.offset) }
            }
        }
    }

    // MARK: Firing

    /// Fires `macro` now with `event` (`macro trigger`: `event.kind` is `manual`). A macro
    /// without triggers runs in the single mode.
    @discardableResult
    public func fire(_ macro: String, event: MacroValue, trigger: Int? = nil) -> FireOutcome {
        enum Decision {
            case start(cancelling: [Int])
            case queued
            case dropped(String)
        }
        let kind = event["kind"].stringValue ?? "manual"
        let now = clock.now
        let scriptPause = kind == "manual" ? nil : javascriptPaused()
        let decision = state.withLock { state -> Decision in
            var armed = state[macro] ?? Armed(declaration: TriggerDeclaration(triggers: [], mode: .single))
            defer { state[macro] = armed }
            if let reason = armed.pausedReason, kind != "manual" {
                armed.dropped += 1
                return .dropped("paused: \(reason)")
            }
            if let scriptPause {
                armed.dropped += 1
                return .dropped("paused: JavaScript is paused (\(scriptPause))")
            }
            if kind == "watch" {
                if let until = armed.watchPausedUntil, now < until {
                    armed.dropped += 1
                    return .dropped("the watcher fired more than \(Self.watchRateLimit) times in a second; paused for a second")
                }
                armed.lastFireTimes = armed.lastFireTimes.filter { now.timeIntervalSince($0) < 1 } + [now]
                if armed.lastFireTimes.count > Self.watchRateLimit {
                    armed.watchPausedUntil = now.addingTimeInterval(1)
                    armed.lastFireTimes = []
                    armed.dropped += 1
                    return .dropped("the watcher fired more than \(Self.watchRateLimit) times in a second; paused for a second")
                }
            }
            let busy = armed.running.count
            switch armed.declaration.mode {
            case .single:
                guard busy == 0 else { armed.dropped += 1; return .dropped("single: a run is going") }
                return .start(cancelling: [])
            case .restart:
                return .start(cancelling: Array(armed.running.keys))
            case .queued(let max):
                guard busy > 0 else { return .start(cancelling: []) }
                guard armed.queue.count < max else { armed.dropped += 1; return .dropped("queued: \(max) already waiting") }
                armed.queue.append(event)
                return .queued
            case .parallel(let max):
                guard busy < max else { armed.dropped += 1; return .dropped("parallel: \(max) already running") }
                return .start(cancelling: [])
            }
        }
        switch decision {
        case .dropped(let reason):
            logger.debug("\(macro): \(kind) trigger dropped (\(reason))")
            tell(.dropped(macro: macro, kind: kind, reason: reason))
            return .dropped(reason: reason)
        case .queued:
            return .queued
        case .start(let cancelling):
            for id in cancelling { perform { [cancel] in cancel(id) } }
            return .started(call: start(macro, event: event, kind: kind))
        }
    }

    private func start(_ macro: String, event: MacroValue, kind: String) -> Int {
        let id = reserveCallID()
        let started = clock.now
        state.withLock { state in
            state[macro]?.running[id] = kind
            state[macro]?.fired += 1
            state[macro]?.firedByKind[kind, default: 0] += 1
        }
        tell(.started(macro: macro, call: id, event: event))
        perform { [run] in
            run(macro, event, id).whenComplete { [weak self] result in
                self?.finished(
                    macro, id: id, kind: kind, started: started, result: result.mapError { ($0 as? MacroError) ?? MacroError(code: .threw, message: "\($0)", macro: macro) })
            }
        }
        return id
    }

    private func finished(_ macro: String, id: Int, kind: String, started: Date, result: Result<MacroValue, MacroError>) {
        let milliseconds = clock.now.timeIntervalSince(started) * 1000
        let next = state.withLock { state -> MacroValue? in
            guard var armed = state[macro] else { return nil }
            armed.running[id] = nil
            armed.completed += 1
            let summary: String
            switch result {
            case .success(let value): summary = value.jsonText(pretty: false)
            case .failure(let error):
                armed.failed += 1
                summary = error.headline
            }
            armed.lastRun = LastRun(at: started, milliseconds: milliseconds, ok: (try? result.get()) != nil, summary: summary)
            // (Optional explicitly: MacroValue reads `nil` as JSON null.)
            let next: MacroValue? = armed.running.isEmpty && !armed.queue.isEmpty ? Optional(armed.queue.removeFirst()) : Optional.none
            state[macro] = armed
            return next
        }
        if case .failure(let error) = result { logger.notice("\(macro): \(kind)-triggered run failed: \(error.headline)") }
        tell(.finished(macro: macro, call: id, kind: kind, milliseconds: milliseconds, result: result))
        if let next { _ = start(macro, event: next, kind: next["kind"].stringValue ?? "manual") }
    }

    // MARK: Reading

    /// Per macro: mode, pause, counts, last run, and per trigger its kind, spec and next fire
    /// time (`macro triggers`, `macro.triggers`).
    public func status() -> [MacroValue] {
        state.withLock { state in
            state.sorted { $0.key < $1.key }.filter { !$0.value.declaration.triggers.isEmpty }.map { macro, armed in
                var mode: OrderedDictionaryBox = ["mode": .string(armed.declaration.mode.name)]
                if let max = armed.declaration.mode.max { mode["max"] = .number(Double(max)) }
                var fields: OrderedDictionaryBox = [
                    "name": .string(macro), "mode": .object(mode),
                    "paused": armed.pausedReason.map { .string($0) } ?? .null,
                    "running": .number(Double(armed.running.count)), "queued": .number(Double(armed.queue.count)),
                    "fired": .number(Double(armed.fired)), "dropped": .number(Double(armed.dropped)), "failed": .number(Double(armed.failed)),
                ]
                fields["lastRun"] =
                    armed.lastRun.map { run in
                        ["at": .string(Self.iso(run.at)), "ms": .number((run.milliseconds * 10).rounded() / 10), "ok": .bool(run.ok), "result": .string(run.summary)]
                    } ?? .null
                fields["triggers"] = .array(
                    armed.declaration.triggers.enumerated().map { index, trigger in
                        [
                            "kind": .string(trigger.kindName), "spec": trigger.spec,
                            "next": armed.next[index].map { .string(Self.iso($0)) } ?? .null,
                            "fired": .number(Double(armed.firedByKind[trigger.kindName] ?? 0)),
                        ]
                    })
                return .object(fields)
            }
        }
    }

    /// Counts per macro and trigger kind (Prometheus).
    public func counts() -> [(macro: String, kind: String, fired: Int)] {
        state.withLock { state in
            state.sorted { $0.key < $1.key }.flatMap { macro, armed in armed.firedByKind.sorted { $0.key < $1.key }.map { (macro, $0.key, $0.value) } }
        }
    }

    /// The totals of `macro`: fired, dropped, failed, completed.
    public func totals(_ macro: String) -> (fired: Int, dropped: Int, failed: Int, completed: Int)? {
        state.withLock { state in state[macro].map { ($0.fired, $0.dropped, $0.failed, $0.completed) } }
    }

    /// Disarms everything (shutdown).
    public func stop() {
        active.store(false, ordering: .relaxed)
        if let (model, token) = observer.withLock({ $0 }) { model.removeObserver(token) }
        let all = state.withLock { state -> [Armed] in
            defer { state.removeAll() }
            return Array(state.values)
        }
        for armed in all {
            for timer in armed.timers.values { timer.cancel() }
            for pending in armed.debounce.values { pending.timer.cancel() }
        }
    }

    static func iso(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: date)
    }
}

typealias OrderedDictionaryBox = OrderedDictionary<String, MacroValue>
