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

    /// Who is making the change the library is about to report, and as what.
    private struct Acting {
        var actor: AuditActor
        var kind: AuditEvent.Kind
        var details: MacroValue?
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
    /// is recorded as `kind` by `actor`, with `details`. Returns `body`'s value and the events.
    @discardableResult
    package func acting<T>(as actor: AuditActor, kind: AuditEvent.Kind, details: MacroValue? = nil, _ body: () throws -> T) rethrows -> (T, [AuditEvent]) {
        let outer = current.withLock { current in
            defer { current = Acting(actor: actor, kind: kind, details: details) }
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
            let acting = current.withLock { $0 }
            let actor = acting?.actor ?? fileActor(name)
            var who = actor.words
            if acting?.kind == .rollback, let restored = acting?.details?["restored"].intValue { who += " (rollback to \(restored))" }
            guard let kept = versions.record(name, content: Array(source.utf8), who: who, time: Date().timeIntervalSince1970) else { return }
            // The first load only keeps what it finds; a file edited while macrod was stopped is news.
            guard acting != nil || library.hasLoadedOnce || kept.previous != nil else { return }
            let event = audit.record(
                acting?.kind ?? .save, by: actor, name: name, before: kept.previous?.hash, after: kept.version.hash, version: kept.version.number,
                details: acting?.details)
            current.withLock { $0?.recorded.append(event) }
        case .removed(let name):
            let acting = current.withLock { $0 }
            guard acting != nil || library.hasLoadedOnce else { return }
            let event = audit.record(
                .delete, by: acting?.actor ?? AuditActor(.file), name: name, before: versions.latest(of: name)?.hash, details: acting?.details)
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
