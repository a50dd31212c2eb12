import Foundation
import Logging
import MacroBase
import MacroEngineCore
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// What changed and who changed it: the ``VersionStore`` (every version of every macro and lib
/// file that went live) and the ``AuditLog``, fed by the library's changes. A change comes from
/// whoever is acting when the library reports it (``acting(as:kind:details:_:)``: a save, a
/// rollback or a delete of a method, on the engine's loop), else from a file written on disk (the
/// directory watcher, an editor). Files seen at the first load are kept without an audit event,
/// unless they changed since their last kept version (edited while macrod was not running).
package final class History: Sendable {
    /// The kept versions.
    package let versions: VersionStore
    /// The audit log.
    package let audit: AuditLog
    private let library: MacroLibrary
    private let logger: Logger
    private let current = Mutex<Acting?>(nil)
    /// The hash of each file's content as last seen live (by entry name): a change's `before`,
    /// whether or not the history could keep the version.
    private let live = Mutex<[String: String]>([:])

    /// Who is making the change the library is about to report, and as what.
    private struct Acting {
        var actor: AuditActor
        var kind: AuditEvent.Kind
        var details: MacroValue?
        /// The hash of the content the actor wrote (a rollback): another content loaded meanwhile
        /// is another writer's, recorded as a save from a file.
        var expecting: String?
        var recorded: [AuditEvent] = []
    }

    /// The history of `library`'s files in `versions`, its changes audited in `audit`. Call
    /// ``libraryChanged(_:)`` with each change the library reports.
    package init(versions: VersionStore, audit: AuditLog, library: MacroLibrary, logger: Logger) {
        self.versions = versions
        self.audit = audit
        self.library = library
        self.logger = logger
    }

    /// The history of `stateFile`'s daemon: `STATE.history/` and `STATE.audit.jsonl`, beside it.
    package convenience init(
        stateFile: String, limits: HistoryLimits, auditEntries: Int, library: MacroLibrary, logger: Logger,
        counted: @escaping @Sendable (AuditEvent.Kind) -> Void = { _ in }
    ) {
        self.init(
            versions: VersionStore(directory: stateFile + ".history", limits: limits, logger: logger),
            audit: AuditLog(path: stateFile + ".audit.jsonl", limit: auditEntries, logger: logger, counted: counted), library: library, logger: logger)
    }

    /// Runs `body` (a save, a rollback, a delete) as `actor`: what the library reports meanwhile
    /// is recorded as `kind` by `actor`, with `details`; with `expecting` (a content's hash) only
    /// that content is the actor's. Returns `body`'s value and the events.
    @discardableResult
    package func acting<T>(
        as actor: AuditActor, kind: AuditEvent.Kind, details: MacroValue? = nil, expecting: String? = nil, _ body: () throws -> T
    ) rethrows -> (T, [AuditEvent]) {
        let outer = current.withLock { current in
            defer { current = Acting(actor: actor, kind: kind, details: details, expecting: expecting) }
            return current
        }
        defer { current.withLock { $0 = outer } }
        let value = try body()
        return (value, current.withLock { $0?.recorded ?? [] })
    }

    /// Records a change the library reports: a new live version is kept (and audited as a save,
    /// or as what the actor does), a removed file is audited as a delete.
    package func libraryChanged(_ change: MacroLibrary.Change) {
        switch change {
        case .loaded(let name, _, _):
            guard let source = library.liveSource(of: name) else { return }
            let bytes = Array(source.utf8)
            let hash = SHA256.hex(bytes)
            // Not the content the actor wrote (an editor saved meanwhile): the editor's save.
            let acting = current.withLock { $0.flatMap { $0.expecting == nil || $0.expecting == hash ? $0 : nil } }
            let actor = acting?.actor ?? fileActor(name)
            var who = actor.words
            if acting?.kind == .rollback, let restored = acting?.details?["restored"].intValue { who += " (rollback to \(restored))" }
            let before = live.withLock { live in
                defer { live[name] = hash }
                return live[name] ?? versions.latest(of: name)?.hash
            }
            guard before != hash else { return }
            // Kept when the history can (not when the disk is full or the history is off); audited either way.
            let kept = versions.record(name, content: bytes, who: who, time: Date().timeIntervalSince1970)
            // The first load only keeps what it finds; a file edited while macrod was stopped is news.
            guard acting != nil || library.hasLoadedOnce || before != nil else { return }
            let event = audit.record(
                acting?.kind ?? .save, by: actor, name: name, before: before, after: hash, version: kept?.version.number, details: acting?.details)
            if acting != nil { current.withLock { $0?.recorded.append(event) } }
        case .removed(let name):
            let acting = current.withLock { $0 }
            let before = live.withLock { $0.removeValue(forKey: name) } ?? versions.latest(of: name)?.hash
            guard acting != nil || library.hasLoadedOnce else { return }
            let event = audit.record(.delete, by: acting?.actor ?? AuditActor(.file), name: name, before: before, details: acting?.details)
            current.withLock { $0?.recorded.append(event) }
        case .failed, .resourceChanged:
            break
        }
    }

    /// A file written on disk, by its owner.
    private func fileActor(_ name: String) -> AuditActor {
        var info = stat()
        let owner = lstat(library.file(ofEntry: name), &info) == 0 ? info.st_uid : nil
        return AuditActor(.file, uid: owner)
    }
}
