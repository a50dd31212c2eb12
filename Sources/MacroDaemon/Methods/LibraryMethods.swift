import Foundation
import MacroEngineCore
import MacroRPC

/// The macro files: `macro.list`, `macro.source`, `macro.save`, `macro.check`, `macro.delete`,
/// `macro.types`.
extension EngineMethods {
    /// `macro.list`: every macro, then every lib file.
    func list(_ request: MethodRequest) -> MethodReply {
        .value(.array(library.listing()))
    }

    /// `macro.source {name}`.
    func source(_ request: MethodRequest) throws -> MethodReply {
        let params = request.params
        // A lib file as macro.list names it: lib/NAME.
        if case .string(let name) = params.value["name"], name.hasPrefix("lib/") {
            return .value(["name": .string(name), "source": .string(try library.libSource(of: name))])
        }
        let name = try params.macroName()
        return .value(["name": .string(name), "source": .string(try library.source(of: name))])
    }

    /// `macro.types`: the TypeScript declarations of the globals and the live macros.
    func types(_ request: MethodRequest) throws -> MethodReply {
        let names = library.entries.filter { $0.version > 0 }.map(\.name)
        return .value(["source": .string(try engine.typeDeclarations(channels: model.channels, macros: names))])
    }

    /// `macro.save {name, source}`: checked first (a syntax error saves nothing), then written
    /// atomically and loaded.
    func save(_ request: MethodRequest) throws -> MethodReply {
        let params = request.params
        let name = try params.macroName(in: engine)
        let source = try params.string("source")
        let path = "\(library.directory)/\(name).js"
        try engine.checkMacro(javascript: source, key: name, file: path)
        do {
            // An existing file keeps its mode; a new one gets what the user's umask gives.
            let mode = FileMode.existing(path) ?? settings.read { $0.newFileMode }
            try AtomicFile.write(Data(source.utf8), to: path, mode: mode, exactMode: true)
        } catch let error as MacroError {
            throw RPCError(code: RPCError.internalError, message: error.message)
        }
        let (entry, _) = changes.acting(as: request.connection.actor, kind: .save) { library.load(file: path) }
        return .value(["name": .string(name), "file": .string(path), "version": .number(Double(entry.version))])
    }

    /// `macro.check {name, source}`: whether `source` would load as macro `name`, judged exactly as
    /// `macro.save` judges it, without writing or loading anything: `{name, ok: true}`, or -32003
    /// with the line and column. `macro edit` asks it about the text the user saved, so its
    /// verdict is about that text and not about an earlier save the list still shows.
    func check(_ request: MethodRequest) throws -> MethodReply {
        let params = request.params
        let name = try params.macroName(in: engine)
        let source = try params.string("source")
        try engine.checkMacro(javascript: source, key: name, file: "\(library.directory)/\(name).js")
        return .value(["name": .string(name), "ok": true])
    }

    /// `macro.delete {name}`.
    func delete(_ request: MethodRequest) throws -> MethodReply {
        let name = try request.params.macroName()
        let path = "\(library.directory)/\(name).js"
        guard FileManager.default.fileExists(atPath: path) || library.entry(named: name) != nil else {
            throw RPCError(code: RPCError.noSuchMacro, message: "no macro named '\(name)'")
        }
        if unlink(path) != 0 && errno != ENOENT {
            throw RPCError(code: RPCError.internalError, message: "cannot delete \(path): \(String(cString: strerror(errno)))")
        }
        changes.acting(as: request.connection.actor, kind: .delete) { library.remove(name) }
        return .value(["name": .string(name)])
    }
}
