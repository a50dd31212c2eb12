import CJavaScriptCore
import Foundation

extension MacroEngine {
    /// Installs `onReload(handler)` and `resource(name)`. Called once from init, on the loop.
    func installModuleNatives(runtime: JSRuntime) {
        runtime.defineNativeGlobal(
            "onReload",
            fast: { [weak self] arguments in
                guard let self else { throw MacroError.engineGone }
                let runtime = self.runtime.value
                guard let handler = arguments.first, let object = handler.objectRef, JSObjectIsFunction(runtime.context.ref, object) else {
                    throw MacroError.typeError("onReload(handler): handler must be a function")
                }
                guard let owner = runtime.currentOwner else {
                    throw MacroError.typeError("onReload(handler) registers a handler for the macro or module whose code calls it; here no file's code is running")
                }
                runtime.modules.setHandler(ModuleRegistry.Handler(function: object, owner: owner))
                return runtime.context.undefined
            })
        runtime.defineNativeGlobal(
            "resource",
            fast: { [weak self] arguments in
                guard let self else { throw MacroError.engineGone }
                let runtime = self.runtime.value
                guard let name = arguments.first?.string else {
                    throw MacroError.typeError("resource(name): name must be a string, such as \"words.txt\"")
                }
                guard let directory = runtime.resourcesDirectory else {
                    throw MacroError(code: .io, message: "resource('\(name)'): this engine has no macros directory, so no resources folder")
                }
                let value = try Resources.read(name, in: directory)
                if let file = runtime.currentOwner?.file { runtime.modules.resourceReaders[Resources.key(name), default: []].insert(file) }
                switch value {
                case .text(let text): return runtime.context.string(text)
                case .json(let json): return try runtime.jsValue(json)
                }
            })
    }
}

/// The data files of `macros/resources/`, read by `resource(name)`: text files as strings, `.json`
/// files parsed. Reads are confined to the folder: no absolute path, no `..`, no symlink that
/// leads out. Each read sees the file as it is now.
enum Resources {
    /// Files larger than this are refused.
    static let maximumBytes = 4 << 20

    /// What a read gives.
    enum Content: Equatable {
        case text(String)
        case json(MacroValue)
    }

    /// The name as readers are recorded under (`./a.txt` and `a.txt` are one resource).
    static func key(_ name: String) -> String { ModulePaths.normalized(name) }

    /// Reads resource `name` of `directory`. Throws `.io` naming what is wrong.
    static func read(_ name: String, in directory: String) throws -> Content {
        func refuse(_ reason: String) -> MacroError {
            MacroError(code: .io, message: "resource('\(name)'): \(reason)", file: "\(directory)/\(name)")
        }
        guard !name.isEmpty else { throw refuse("the name is empty; name a file of the resources folder, such as \"words.txt\"") }
        guard !name.hasPrefix("/") else { throw refuse("an absolute path is not allowed; name a file inside the resources folder (\(directory))") }
        guard !name.split(separator: "/").contains("..") else { throw refuse("'..' is not allowed: resources are read from inside the resources folder only") }
        guard !name.contains("\u{0}") else { throw refuse("the name contains a NUL character") }
        let path = directory + "/" + name
        let root = URL(fileURLWithPath: directory).resolvingSymlinksInPath().path
        let resolved = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
        guard resolved != root else { throw refuse("it is a folder, not a file") }
        guard resolved.hasPrefix(root + "/") else {
            throw refuse("the file is a symlink that leads out of the resources folder (to \(resolved)); refused")
        }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: resolved, isDirectory: &isDirectory) else {
            throw refuse("no such file in \(directory)")
        }
        guard !isDirectory.boolValue else { throw refuse("it is a folder, not a file") }
        let data: Data
        do {
            let attributes = try FileManager.default.attributesOfItem(atPath: resolved)
            // A FIFO or a device would block the engine's thread on the read, or never end.
            guard attributes[.type] as? FileAttributeType == .typeRegular else { throw refuse("it is not a regular file") }
            let size = (attributes[.size] as? NSNumber)?.intValue ?? 0
            guard size <= maximumBytes else { throw refuse("the file is \(size) bytes; resources are limited to \(maximumBytes) bytes") }
            data = try Data(contentsOf: URL(fileURLWithPath: resolved))
        } catch let error as MacroError {
            throw error
        } catch {
            throw refuse("cannot read the file: \(MacroConfig.reason(error))")
        }
        guard let text = String(validating: data, as: UTF8.self) else {
            let (line, column) = SourceFile.firstInvalidUTF8(in: data)
            throw refuse("the file is not valid UTF-8 (at line \(line), column \(column))")
        }
        guard name.hasSuffix(".json") else { return .text(text) }
        do {
            return .json(try JSONParser.parse(text))
        } catch {
            throw refuse("the file is not valid JSON: \(error)")
        }
    }
}
