import Foundation
import Logging
import NIOCore
import Synchronization

/// The macros of one directory: each `NAME.js` holds one function expression, registered as the
/// global function `NAME` (so macros call one another) and kept as a ``MacroMethod``.
///
/// Rules: `NAME` must be a JavaScript identifier and not shadow an engine global; hidden files,
/// editor temporaries (`.swp`, `~`, `.#...`, `#...#`) and non-`.js` files are ignored; a symlink
/// must stay inside the directory. A file that does not load is reported with file:line:column
/// and skipped; the others load. When a loaded macro's file breaks, its last good version stays live.
public final class MacroLibrary: Sendable {
    /// The directory the macros come from.
    public let directory: String
    /// The engine they are registered in.
    public let engine: MacroEngine
    let logger: Logger
    let state: Mutex<[String: Item]>
    private let quarantine = Mutex<Quarantine>(Quarantine())
    /// How many changes of each resource were seen (``resourceChanged(_:)``).
    let resourceVersions = Mutex<[String: Int]>([:])
    /// The entry names of the lib files written as modules (as of the last lib reload).
    let moduleNames = Mutex<Set<String>>([])

    /// Files not to evaluate while their content is what stalled the engine (see ``Quarantine``).
    public func setQuarantine(_ list: Quarantine) { quarantine.locked { $0 = list } }
    /// The quarantine as it stands (a saved change or ``unquarantine(_:)`` lifts entries).
    public var quarantineList: Quarantine { quarantine.locked { $0 } }

    /// The quarantined file of `name` (a macro, or `lib/NAME`), if any.
    public func quarantined(_ name: String) -> Quarantine.File? {
        let path = self.path(ofEntry: name)
        return quarantine.locked { list in list.files.first { $0.path == path } }
    }

    /// Lifts the quarantine of `name` (a macro, or `lib/NAME`) and loads its file again.
    /// Throws `.noSuchMacro` when `name` is not quarantined.
    @discardableResult
    public func unquarantine(_ name: String) throws -> Quarantine.File {
        let path = self.path(ofEntry: name)
        guard let file = quarantine.locked({ $0.lift(path) }) else {
            let names = quarantine.locked { $0.files.map { $0.macro ?? Self.entryName(ofPath: $0.path, directory: directory) } }
            throw MacroError(
                code: .noSuchMacro,
                message: "'\(name)' is not quarantined" + (names.isEmpty ? " (nothing is)" : " (quarantined: \(names.sorted().joined(separator: ", ")))"),
                macro: name)
        }
        logger.notice("quarantine of \(name) lifted; loading it again")
        if name.hasPrefix("lib/") { refreshLib() } else { load(file: path) }
        return file
    }

    /// The path of entry `name`: `DIR/NAME.js`, or `DIR/lib/NAME.js` for `lib/NAME`.
    func path(ofEntry name: String) -> String {
        name.hasPrefix("lib/") ? "\(libDirectory)/\(name.dropFirst(4)).js" : "\(directory)/\(name).js"
    }

    /// The entry name of a path of this directory (`bump` or `lib/rings`).
    public static func entryName(ofPath path: String, directory: String) -> String {
        let relative = path.hasPrefix(directory + "/") ? String(path.dropFirst(directory.count + 1)) : (path as NSString).lastPathComponent
        return relative.hasSuffix(".js") ? String(relative.dropLast(3)) : relative
    }

    /// Throws the quarantine error when `path` still holds the content that stalled the engine;
    /// lifts the quarantine when the content changed (a saved fix).
    func checkQuarantine(_ path: String, source: String, name: String) throws {
        let verdict: (held: Quarantine.File?, lifted: Bool) = quarantine.locked { list in
            guard let file = list.files.first(where: { $0.path == path }) else { return (nil, false) }
            if let held = list.holds(path, content: source) { return (held, false) }
            list.lift(file.path)
            return (nil, true)
        }
        if verdict.lifted { logger.notice("\(name) changed: its quarantine is lifted") }
        if let file = verdict.held { throw Quarantine.error(for: file, macro: name) }
    }
    private let observer = Mutex<CallbackBox<@Sendable (Change) -> Void>?>(nil)

    /// What changed in the library, for live reload notifications.
    public enum Change: Sendable, Equatable {
        /// A new version of the macro (or lib file) is live; `dependents` name the files that
        /// went live with a module's new version (its importers).
        case loaded(name: String, version: Int, dependents: [String])
        /// The file does not load (the previous version, if any, stays live); for a module,
        /// `dependents` name its importers, which keep their versions too.
        case failed(name: String, error: MacroError, dependents: [String])
        /// The file is gone; so is the macro.
        case removed(name: String)
        /// A file of `resources/` changed (`resources/NAME`); `version` counts its changes seen.
        case resourceChanged(name: String, version: Int)
    }

    /// Called after each change (on the thread that made it).
    public func onChange(_ body: (@Sendable (Change) -> Void)?) {
        observer.locked { $0 = body.map { CallbackBox($0) } }
    }

    func notify(_ change: Change) {
        observer.locked { $0 }?.call(change)
    }

    /// A class, immutable (replaced whole): reading one out of the table under the lock, as
    /// every call does, is a retain, not a copy of the entry.
    final class Item: Sendable {
        let entry: MacroEntry
        let method: MacroMethod?

        init(entry: MacroEntry, method: MacroMethod?) {
            self.entry = entry
            self.method = method
        }
    }

    /// What runs the macros by themselves (their declared triggers); armed by
    /// ``TriggerScheduler/activate(observing:owner:)``.
    public let triggers: TriggerScheduler

    /// Creates a library for `directory`; nothing is loaded until ``reload()``. `triggerClock`
    /// (default: the engine's loop) times the triggers; `triggerLedger` is the file where the
    /// last fires of schedules with `missed: "once"` are kept.
    public init(directory: String, engine: MacroEngine, logger: Logger, triggerClock: (any TriggerClock)? = nil, triggerLedger: String? = nil) {
        self.directory = directory
        self.engine = engine
        self.logger = logger
        self.state = Mutex([:])
        let box = WeakLibrary()
        triggers = TriggerScheduler(
            clock: triggerClock ?? LoopTriggerClock(loop: engine.eventLoop), logger: logger, ledgerPath: triggerLedger,
            reserveCallID: { [weak engine] in engine?.reserveCallID() ?? 0 },
            perform: { [loop = engine.eventLoop] body in loop.execute(body) },
            javascriptPaused: { [weak engine] in engine?.pausedReason },
            run: { name, event, id in
                guard let library = box.library else { return engine.eventLoop.makeFailedFuture(MacroError.engineGone) }
                library.engine.runLog?.expect(origin: "trigger:\(event["kind"].stringValue ?? "manual")", call: id)
                return library.callFuture(name, arguments: [event], callID: id)
            },
            cancel: { [weak engine] id in _ = engine?.cancel(call: id) })
        box.library = self
        let resources = "\(directory)/resources"
        engine.onLoopEventually { $0.resourcesDirectory = resources }
    }

    /// The data files macros read with `resource(NAME)`: `DIR/resources`.
    public var resourcesDirectory: String { "\(directory)/resources" }

    /// True for files the library does not look at: hidden, editor temporaries, not `.js`.
    public static func isIgnored(_ filename: String) -> Bool {
        if filename.hasPrefix(".") || filename.hasPrefix("#") || filename.hasSuffix("~") { return true }
        for suffix in [".swp", ".swo", ".swx", ".tmp", ".bak"] where filename.hasSuffix(suffix) { return true }
        return !filename.hasSuffix(".js")
    }

    /// The macro name for a file name (`bump.js` -> `bump`).
    public static func macroName(forFile filename: String) -> String { String(filename.dropLast(3)) }

    /// The file names the library would load, sorted. Throws `.io` when the directory cannot be read.
    public func macroFiles() throws -> [String] {
        do {
            return try FileManager.default.contentsOfDirectory(atPath: directory)
                .filter { !Self.isIgnored($0) }
                .filter { name in
                    var isDirectory: ObjCBool = false
                    _ = FileManager.default.fileExists(atPath: "\(directory)/\(name)", isDirectory: &isDirectory)
                    return !isDirectory.boolValue
                }
                .sorted()
        } catch {
            throw MacroError(code: .io, message: "cannot read the macros directory \(directory): \(MacroConfig.reason(error))", file: directory)
        }
    }

    /// The shared-code directory: `DIR/lib`. Its `.js` files are plain scripts, evaluated before
    /// the macros in name order; what they declare at top level (helper functions, constants)
    /// every macro can use.
    public var libDirectory: String { "\(directory)/lib" }

    /// The lib files, sorted by name (empty when there is no lib directory).
    public func libFiles() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: libDirectory)) ?? [])
            .filter { !Self.isIgnored($0) }
            .sorted()
    }

    /// Entries of the lib files (name `lib/FILE` without `.js`), by name.
    public var libEntries: [MacroEntry] {
        libState.locked { Array($0.values) }.sorted { $0.name < $1.name }
    }

    let libState = Mutex<[String: MacroEntry]>([:])
    let libSources = Mutex<[String: String]>([:])
    /// The source each lib file's last evaluation ran, by path: what its live functions' lines
    /// refer to (a version with a syntax error is not evaluated). For the profiler.
    let libEvaluated = Mutex<[String: String]>([:])

    /// The sources of the live macro and lib files, as `(path, source, macro name or nil for a
    /// lib file)`: the code JavaScriptCore runs under each path.
    var liveSources: [(file: String, source: String, macro: String?)] {
        let macros = state.locked { $0.values.compactMap(\.method) }
        let live = macros.compactMap { method in method.liveJavaScript.map { (method.file, $0, Optional(method.key)) } }
        return live + libEvaluated.locked { $0.map { ($0.key, $0.value, nil) } }
    }

    /// Evaluates every lib file in name order. A file that does not parse is reported and not
    /// evaluated, so what its previous version defined stays; an unchanged file is not evaluated
    /// again.
    @discardableResult
    public func reloadLib() -> [MacroEntry] {
        var modules: [ModuleFile] = []
        for file in libFiles() {
            let path = "\(libDirectory)/\(file)"
            if let module = moduleFile(at: path), isInside(path) { modules.append(module) } else { loadLib(file: path) }
        }
        applyModules(modules)
        let present = Set(libFiles().map { "lib/" + Self.macroName(forFile: $0) })
        for name in libState.locked({ Array($0.keys) }) where !present.contains(name) {
            libState.locked { _ = $0.removeValue(forKey: name) }
            libSources.locked { _ = $0.removeValue(forKey: name) }
            notify(.removed(name: name))
        }
        return libEntries
    }

    @discardableResult
    func loadLib(file path: String) -> MacroEntry {
        let name = "lib/" + Self.macroName(forFile: (path as NSString).lastPathComponent)
        let previous = libState.locked { $0[name] }
        var entry = MacroEntry(name: name, file: path, status: .ok, version: previous?.version ?? 0)
        do {
            // A lib file is code every macro runs with: a symlink must stay inside the directory, as a macro's must.
            let resolved = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
            let root = URL(fileURLWithPath: directory).resolvingSymlinksInPath().path
            guard resolved.hasPrefix(root + "/") else {
                throw MacroError(code: .io, message: "the file is a symlink to \(resolved), outside the macros directory; skipped", macro: name, file: path)
            }
            let source = try SourceFile.read(path, macro: name)
            try checkQuarantine(path, source: source, name: name)
            if libSources.locked({ $0[name] }) == source, let previous, previous.error?.code != .quarantined, previous.error?.code != .paused { return previous }
            libSources.locked { $0[name] = source }
            do {
                try engine.evaluateLibrary(source, file: path)
            } catch let error as MacroError where error.code != .syntax {
                libEvaluated.locked { $0[path] = source }
                throw error
            }
            libEvaluated.locked { $0[path] = source }
            entry.version += 1
        } catch let error as MacroError {
            var error = error
            error.macro = name
            entry.status = .error
            entry.error = error
            logger.warning("\(error)", metadata: ["lib": "\(name)"])
        } catch {
            entry.status = .error
            entry.error = MacroError(code: .io, message: "\(error)", macro: name, file: path)
        }
        libState.locked { $0[name] = entry }
        if let error = entry.error { notify(.failed(name: name, error: error, dependents: [])) } else { loaded(name, entry.version) }
        return entry
    }

    /// Loads every macro file, drops macros whose files are gone, and returns all entries.
    /// The lib files are evaluated first.
    @discardableResult
    public func reload() throws -> [MacroEntry] {
        let files = try macroFiles()
        reloadLib()
        let present = Set(files.map(Self.macroName(forFile:)))
        for file in files { load(file: "\(directory)/\(file)") }
        for name in state.locked({ Array($0.keys) }) where !present.contains(name) { remove(name) }
        startedUp.store(true, ordering: .relaxed)
        return entries
    }

    /// Set after the first full load: from then on each load is logged at `info`.
    let startedUp = Atomic<Bool>(false)

    /// Logs a version that went live ("loaded bump v3"; `debug` during the first full load,
    /// which logs a summary instead) and tells the observer.
    func loaded(_ name: String, _ version: Int, dependents: [String] = []) {
        let with = dependents.isEmpty ? "" : " with \(dependents.joined(separator: ", "))"
        logger.log(level: startedUp.load(ordering: .relaxed) ? .info : .debug, "loaded \(name) v\(version)\(with)")
        notify(.loaded(name: name, version: version, dependents: dependents))
    }

    /// Loads (or reloads) one file and returns its entry. `requireInsideDirectory: false` skips
    /// the symlink containment check (for `macro check FILE` on any file); a file not ending in
    /// `.js` is named by its base name without extension.
    @discardableResult
    public func load(file path: String, requireInsideDirectory: Bool = true) -> MacroEntry {
        load(file: path, requireInsideDirectory: requireInsideDirectory, force: false)
    }

    /// ``load(file:requireInsideDirectory:)``; `force` loads the file again even when its content
    /// is what was tried last (a module it imports may have come back).
    @discardableResult
    func load(file path: String, requireInsideDirectory: Bool = true, force: Bool) -> MacroEntry {
        let filename = (path as NSString).lastPathComponent
        let name = filename.hasSuffix(".js") ? Self.macroName(forFile: filename) : (filename as NSString).deletingPathExtension
        let existing = state.locked { $0[name] }
        var entry = MacroEntry(name: name, file: path, status: .ok, error: nil, version: existing?.entry.version ?? 0)
        var method = existing?.method
        do {
            try checkLocation(path, name: name, requireInsideDirectory: requireInsideDirectory)
            let source = try SourceFile.read(path, macro: name)
            try checkQuarantine(path, source: source, name: name)
            // The same content again (several events for one save): nothing to do.
            if !force, let existing, let method, method.javascript == source, existing.entry.file == path, existing.entry.error?.code != .quarantined,
                existing.entry.error?.code != .paused
            {
                return existing.entry
            }
            if let method {
                entry.version = try method.update(javascript: source)
            } else {
                let created = MacroMethod(javascript: source, key: name, file: path, engine: engine, reportsErrors: false)
                if let error = created.lastError { throw error }
                method = created
                entry.version = created.version
            }
        } catch let error as MacroError {
            entry.status = .error
            entry.error = error
            logger.warning("\(error)", metadata: ["macro": "\(name)"])
        } catch {
            entry.status = .error
            entry.error = MacroError(code: .io, message: "\(error)", macro: name, file: path)
        }
        let item = Item(entry: entry, method: method)
        state.locked { $0[name] = item }
        updateTriggers(name, file: path, error: entry.error, live: method?.isLoaded ?? false)
        if let error = entry.error {
            notify(.failed(name: name, error: error, dependents: []))
        } else {
            loaded(name, entry.version)
        }
        return entry
    }

    /// Removes a macro (its file is gone): the global is deleted.
    public func remove(_ name: String) {
        triggers.set(name, nil)
        let removed = state.locked { $0.removeValue(forKey: name) }
        if removed?.method != nil { try? engine.removeMethod(key: name) }
        if removed != nil { notify(.removed(name: name)) }
    }

    /// Reloads the lib after one of its files changed, then the macros (a macro that failed
    /// because a lib function was missing may load now).
    public func refreshLib() {
        reloadLib()
        _ = try? reload()
    }

    /// Reloads `filename` of the directory when it exists, removes its macro when it does not.
    /// Ignored names do nothing. Returns the entry, nil when removed or ignored.
    @discardableResult
    public func refresh(filename: String) -> MacroEntry? {
        guard !Self.isIgnored(filename) else { return nil }
        let path = "\(directory)/\(filename)"
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue {
            return load(file: path)
        }
        remove(Self.macroName(forFile: filename))
        return nil
    }

    /// The source of macro `name` as the file holds it now.
    public func source(of name: String) throws -> String {
        guard MacroName.isIdentifier(name) else {
            throw MacroError(code: .invalidName, message: "'\(name)' is not a valid macro name", macro: name)
        }
        let path = "\(directory)/\(name).js"
        guard FileManager.default.fileExists(atPath: path) else {
            throw MacroError(code: .noSuchMacro, message: "no macro named '\(name)'", macro: name)
        }
        return try SourceFile.read(path, macro: name)
    }

    /// The source of lib file `name` (`lib/NAME`, as `macro.list` names it) as the file holds it now.
    public func libSource(of name: String) throws -> String {
        let base = String(name.dropFirst(4))
        guard name.hasPrefix("lib/"), MacroName.isIdentifier(base) else {
            throw MacroError(code: .invalidName, message: "'\(name)' is not a lib file name (lib/NAME)", macro: name)
        }
        let path = "\(libDirectory)/\(base).js"
        guard FileManager.default.fileExists(atPath: path) else {
            throw MacroError(code: .noSuchMacro, message: "no lib file named '\(name)'", macro: name)
        }
        return try SourceFile.read(path, macro: name)
    }

    /// Removes every macro (the directory is gone).
    public func removeAll() {
        for name in state.locked({ Array($0.keys) }) { remove(name) }
    }

    /// Every entry, by name.
    public var entries: [MacroEntry] {
        state.locked { $0.values.map(\.entry) }.sorted { $0.name < $1.name }
    }

    /// The entry for `name`.
    public func entry(named name: String) -> MacroEntry? { state.locked { $0[name]?.entry } }

    /// Calls macro `name`. Throws `.noSuchMacro` (naming the available macros) when there is no
    /// live version, the load error when its file never loaded, and the macro's own errors.
    @discardableResult
    public func call(_ name: String, arguments: [MacroValue] = [], timeLimit: Duration? = nil) throws -> MacroValue {
        let item = state.locked { $0[name] }
        guard let item else {
            let available = entries.filter { $0.version > 0 }.map(\.name)
            throw MacroError(
                code: .noSuchMacro,
                message: "no macro named '\(name)' in \(directory)" + (available.isEmpty ? "" : " (available: \(available.joined(separator: ", ")))"),
                macro: name)
        }
        guard let method = item.method, method.isLoaded else {
            throw item.entry.error ?? MacroError(code: .noSuchMacro, message: "macro '\(name)' is not loaded", macro: name)
        }
        do {
            return try method.call(arguments, timeLimit: timeLimit)
        } catch {
            throw explainingBrokenLib(error)
        }
    }

    /// Calls macro `name` as an asynchronous call (see ``MacroEngine/callFuture(_:arguments:deadline:)``):
    /// the future settles when the macro's promise does, or fails at the deadline.
    /// `callID` (from ``MacroEngine/reserveCallID()``) lets the caller know the call's id before it starts.
    public func callFuture(_ name: String, arguments: [MacroValue] = [], deadline: Duration? = nil, callID: Int? = nil) -> EventLoopFuture<MacroValue> {
        switch callOutcome(name, arguments: arguments, deadline: deadline, callID: callID) {
        case .ended(let result): engine.eventLoop.makeCompletedFuture(result)
        case .pending(let future): future
        }
    }

    /// ``callFuture(_:arguments:deadline:callID:)`` as a ``CallStart``: on the engine's loop, a
    /// call that ends in its first turn (and a macro that does not exist) comes back without a
    /// future.
    public func callOutcome(_ name: String, arguments: [MacroValue] = [], deadline: Duration? = nil, callID: Int? = nil) -> CallStart {
        let item = state.locked { $0[name] }
        guard let item else {
            let available = entries.filter { $0.version > 0 }.map(\.name)
            return .ended(
                .failure(
                    MacroError(
                        code: .noSuchMacro,
                        message: "no macro named '\(name)' in \(directory)" + (available.isEmpty ? "" : " (available: \(available.joined(separator: ", ")))"),
                        macro: name)))
        }
        guard let function = item.method?.liveFunction else {
            return .ended(.failure(item.entry.error ?? MacroError(code: .noSuchMacro, message: "macro '\(name)' is not loaded", macro: name)))
        }
        // On the engine's loop and outside JavaScript (the daemon's engine lane), the call starts
        // here, and one that ends in its first turn comes back without a future; anywhere else
        // (or for a function of another engine, which fails there) it is `.pending`.
        guard engine.eventLoop.inEventLoop, case let runtime = engine.runtime.value, runtime.entryDepth == 0,
            let object = function.objectRef(in: runtime)
        else {
            return .pending(engine.callFuture(function, arguments: arguments, deadline: deadline, callID: callID, explainer: self))
        }
        return engine.invokeOutcome(object, arguments: arguments, macro: function.name, budget: deadline, callID: callID, explainer: self, runtime: runtime)
    }

    /// True when `path`, symlinks followed, is inside the directory.
    func isInside(_ path: String) -> Bool {
        let resolved = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
        let root = URL(fileURLWithPath: directory).resolvingSymlinksInPath().path
        return resolved.hasPrefix(root + "/")
    }

    private func checkLocation(_ path: String, name: String, requireInsideDirectory: Bool) throws {
        if let reason = MacroName.shadowingReason(name) {
            throw MacroError(code: .invalidName, message: reason + "; file skipped", macro: name, file: path)
        }
        guard MacroName.isIdentifier(name) else {
            throw MacroError(
                code: .invalidName,
                message: "'\(name)' is not a valid macro name: use letters, digits, _ or $, not starting with a digit, and not a JavaScript keyword; file skipped",
                macro: name, file: path)
        }
        guard requireInsideDirectory else { return }
        let resolved = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
        let root = URL(fileURLWithPath: directory).resolvingSymlinksInPath().path
        guard resolved.hasPrefix(root + "/") else {
            throw MacroError(code: .io, message: "the file is a symlink to \(resolved), outside the macros directory; skipped", macro: name, file: path)
        }
    }
}

/// The library, weakly, for the scheduler's runs (made before the library is whole).
private final class WeakLibrary: Sendable {
    private let reference = Mutex<WeakReference?>(nil)
    private struct WeakReference: Sendable { weak var value: MacroLibrary? }

    var library: MacroLibrary? {
        get { reference.withLock { $0?.value } }
        set { reference.withLock { $0 = WeakReference(value: newValue) } }
    }
}

extension MacroLibrary {
    /// After a load of macro `name`: its live version's triggers are armed; a file that does
    /// not load (or is quarantined) pauses them until it does.
    func updateTriggers(_ name: String, file: String, error: MacroError?, live: Bool) {
        let path = ModulePaths.normalized(file)
        if live, let declaration = try? engine.sync({ runtime in runtime.modules.triggers[path] }) {
            triggers.set(name, declaration)
        } else if live {
            triggers.set(name, nil)
        } else if error != nil, let source = try? SourceFile.read(file, macro: name),
            let declaration = try? engine.sync({ runtime in runtime.declaredTriggers(in: source, file: file, macro: name) })
        {
            // Never live (quarantined from the start, say): its triggers are listed, paused.
            triggers.set(name, declaration)
        }
        triggers.pause(name, reason: error.map { $0.code == .quarantined ? "quarantined: \($0.message)" : "its file does not load: \($0.headline)" })
    }
}

extension MacroLibrary {
    /// Arms the macros' triggers and watches `model` (its committed changes fire `watch`
    /// triggers; a change made by a macro's own code does not fire that macro's watchers).
    public func activateTriggers(observing model: ProgressModel?) {
        let engine = engine
        let loop = engine.eventLoop
        triggers.activate(observing: model, owner: { engine.runningMacro }, later: { body in loop.execute(body) })
    }
}
