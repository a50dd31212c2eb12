import Foundation
import MacroEngineCore
import MacroRPC

/// What changed and who changed it: `macro.history`, `macro.diff`, `macro.rollback`,
/// `audit.recent` (see ``History``).
extension EngineMethods {
    /// `macro.history {name}`: the kept versions of a macro or lib file, oldest first, and which
    /// of them the file on disk holds now.
    func history(_ request: MethodRequest) throws -> MethodReply {
        let name = try request.params.historyName()
        let versions = changes.versions.versions(of: name)
        guard !versions.isEmpty else { throw HistoryError(.noHistory, "\(name) has no kept versions") }
        let current = currentBytes(of: name).map { SHA256.hex($0) }
        return .value([
            "name": .string(name), "file": .string(library.file(ofEntry: name)),
            "versions": .array(versions.map(Self.json)),
            "current": versions.last { $0.hash == current }.map { .number(Double($0.number)) } ?? .null,
        ])
    }

    /// `macro.diff {name, from, to?}`: the unified diff from version `from` to version `to`, or
    /// to the file as it is now (`to` absent, null or `"current"`).
    func diff(_ request: MethodRequest) throws -> MethodReply {
        let params = request.params
        let name = try params.historyName()
        let from = try params.versionNumber("from")
        let old = String(decoding: try changes.versions.content(of: name, number: from), as: UTF8.self)
        let new: String, label: String, to: MacroValue
        switch params.value["to"] {
        case .undefined, .null, .string("current"):
            guard let bytes = currentBytes(of: name) else { throw HistoryError(.noSuchVersion, "\(name) has no file now (\(library.file(ofEntry: name)))") }
            (new, label, to) = (String(decoding: bytes, as: UTF8.self), "\(name) (current)", "current")
        default:
            let number = try params.versionNumber("to")
            (new, label, to) = (String(decoding: try changes.versions.content(of: name, number: number), as: UTF8.self), "\(name)@\(number)", .number(Double(number)))
        }
        let text = LineDiff.unified(old, new, oldLabel: "\(name)@\(from)", newLabel: label)
        return .value(["name": .string(name), "from": .number(Double(from)), "to": to, "diff": .string(text)])
    }

    /// `macro.rollback {name, version}`: writes version `version` back to the file atomically and
    /// loads it through the path a save takes. A version that no longer loads is refused with its
    /// load error (-32003), the file left as it was and the current version serving. When another
    /// writer saved the file between the write and the load, the rollback is refused as a
    /// conflict (-32603, `data.reason: "conflict"`) and the other text, live, is its save.
    func rollback(_ request: MethodRequest) throws -> MethodReply {
        let params = request.params
        let name = try params.historyName()
        let number = try params.versionNumber("version")
        let bytes = try changes.versions.content(of: name, number: number)
        let path = library.file(ofEntry: name)
        let previous = currentBytes(of: name)
        let isLib = name.hasPrefix("lib/")
        if !isLib {
            // Judged as macro.save judges a source: a refusal writes nothing.
            try engine.checkMacro(javascript: String(decoding: bytes, as: UTF8.self), key: name, file: path)
        }
        if previous != bytes {
            try write(bytes, to: path)
        }
        let (error, _) = changes.acting(
            as: request.connection.actor, kind: .rollback, details: ["restored": .number(Double(number))], expecting: SHA256.hex(bytes)
        ) { () -> MacroError? in
            if isLib {
                library.refreshLib()
                return library.libEntries.first { $0.name == name }?.error
            }
            return library.load(file: path).error
        }
        if let error {
            // Loaded through the normal path and refused there: the file goes back to what it was.
            if let previous, previous != bytes {
                try write(previous, to: path)
                if isLib { library.refreshLib() } else { library.load(file: path) }
            } else if previous == nil {
                unlink(path)
                if isLib { library.refreshLib() } else { library.remove(name) }
            }
            throw error
        }
        // What went live must be what was written: another writer's save meanwhile is its own.
        guard library.liveSource(of: name).map({ Array($0.utf8) }) == bytes else {
            throw HistoryError(
                .conflict, "\(name): the file was changed by another writer while version \(number) was restored; nothing was rolled back (the other text is live)")
        }
        let live = changes.versions.latest(of: name)
        return .value([
            "name": .string(name), "file": .string(path), "restored": .number(Double(number)),
            "version": live.map { .number(Double($0.number)) } ?? .null, "unchanged": .bool(previous == bytes),
        ])
    }

    /// `audit.recent {limit?, name?, kind?}`: the newest audit events, oldest first.
    func auditRecent(_ request: MethodRequest) throws -> MethodReply {
        let params = request.params
        var limit: Int?
        switch params.value["limit"] {
        case .undefined, .null: break
        case .number(let n) where n.rounded() == n && n >= 1 && n <= 10_000_000: limit = Int(n)
        default: throw params.invalid("limit", "must be a whole number from 1")
        }
        var name: String?
        if params.value["name"] != .undefined { name = try params.historyName() }
        var kind: AuditEvent.Kind?
        switch params.value["kind"] {
        case .undefined, .null: break
        case .string(let text) where AuditEvent.Kind(rawValue: text) != nil: kind = AuditEvent.Kind(rawValue: text)
        default: throw params.invalid("kind", "must be one of \(AuditEvent.Kind.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return .value(.array(changes.audit.recent(limit: limit, name: name, kind: kind).map(\.json)))
    }

    /// A kept version as `macro.history` shows it.
    static func json(_ version: StoredVersion) -> MacroValue {
        [
            "version": .number(Double(version.number)), "hash": .string(version.hash), "bytes": .number(Double(version.bytes)),
            "time": .string(AuditEvent.iso8601(version.time)), "who": .string(version.who),
        ]
    }

    /// The bytes of `name`'s file now; nil when there is none (a symlink is not followed).
    private func currentBytes(of name: String) -> [UInt8]? {
        try? PlainFile.read(library.file(ofEntry: name))
    }

    /// Writes a macro or lib file as `macro.save` does: atomically, keeping an existing file's mode.
    private func write(_ bytes: [UInt8], to path: String) throws {
        do {
            let mode = FileMode.existing(path) ?? settings.read { $0.newFileMode }
            try AtomicFile.write(Data(bytes), to: path, mode: mode, exactMode: true)
        } catch let error as MacroError {
            throw RPCError(code: RPCError.internalError, message: error.message)
        }
    }
}

extension Params {
    /// The `name` param of the history's methods: a macro name, or a lib file as `lib/NAME`,
    /// by the rules the library loads them by (and so keeps their versions by).
    func historyName() throws -> String {
        let name = try string("name")
        guard Self.isHistoryName(name) else {
            throw invalid(
                "name",
                "'\(name)' is not a macro name (an identifier of at most 128 characters, not a reserved word) or lib/NAME (a lib file's name without .js)")
        }
        return name
    }

    /// True for a macro name (``MacroName/isIdentifier(_:)``) and for `lib/NAME` where `NAME.js`
    /// is a file name the library loads from `lib/` (``MacroLibrary/isIgnored(_:)``: not hidden,
    /// at most 255 bytes, no `/`).
    static func isHistoryName(_ name: String) -> Bool {
        guard name.hasPrefix("lib/") else { return MacroName.isIdentifier(name) }
        let file = name.dropFirst(4) + ".js"
        return file.count > 3 && file.utf8.count <= 255 && !file.contains("/") && !file.contains("\0") && !MacroLibrary.isIgnored(String(file))
    }

    /// A version number param: a whole number from 1.
    func versionNumber(_ key: String) throws -> Int {
        guard case .number(let n) = value[key], n.rounded() == n, n >= 1, n <= 1e15 else {
            throw invalid(key, value[key] == .undefined ? "is required" : "must be a version number (1, 2, ...)")
        }
        return Int(n)
    }
}
