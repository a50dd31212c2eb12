import Foundation
import MacroEngineCore
import MacroRPC

/// What keeps JavaScript from running, and how to lift it: `macro.unquarantine`, `engine.resume`,
/// and the quarantine as `engine.status`, `macro.stats` and the metrics show it.
extension EngineMethods {
    /// `macro.unquarantine {name}`: lifts the quarantine of a macro (or `lib/NAME`) and loads its
    /// file again; answers the lifted entry and the file's status after the load.
    func unquarantine(_ request: MethodRequest) throws -> MethodReply {
        let params = request.params
        guard case .string(let name) = params.value["name"] else { throw params.invalid("name", "must be a macro name, or lib/NAME for a lib file") }
        let lifted: Quarantine.File
        do {
            // The lift is audited; the load it makes is the file's own (no new content: no save).
            lifted = try library.unquarantine(name)
        } catch let error as MacroError {
            throw RPCError(code: RPCError.noSuchMacro, message: error.message)
        }
        changes.audit.record(
            .unquarantine, by: request.connection.actor, name: name, after: changes.versions.latest(of: name)?.hash,
            details: ["file": .string(lifted.path), "stalls": .number(Double(lifted.stalls))])
        let entry = name.hasPrefix("lib/") ? library.libEntries.first { $0.name == name } : library.entry(named: name)
        return .value([
            "name": .string(name), "file": .string(lifted.path), "stalls": .number(Double(lifted.stalls)),
            "status": entry.map { .string($0.status.rawValue) } ?? .null,
        ])
    }

    /// `engine.resume`: runs JavaScript again after the restart budget paused it, and loads the
    /// macros again. Answers `{resumed: true}` (false when it was not paused).
    func resume(_ request: MethodRequest) -> MethodReply {
        let wasPaused = engine.pausedReason != nil
        engine.resumeJavaScript()
        if wasPaused { _ = try? library.reload() }
        return .value(["resumed": .bool(wasPaused)])
    }

    /// The quarantine for `engine.status`: one object per file.
    func quarantineJSON() -> MacroValue {
        .array(
            library.quarantineList.files.map { file in
                [
                    "name": .string(file.macro ?? MacroLibrary.entryName(ofPath: file.path, directory: library.directory)),
                    "file": .string(file.path), "stalls": .number(Double(file.stalls)), "atLoad": .bool(file.atLoad),
                    "since": .number(file.since), "reason": .string(file.reason), "remedy": .string(file.remedy),
                ]
            })
    }
}
