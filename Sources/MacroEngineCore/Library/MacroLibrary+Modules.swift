import Foundation
import Logging

/// The lib files written as ES modules: loading them in dependency order, reloading a changed
/// one with everything that imports it as one swap, and telling the code that uses it.
extension MacroLibrary {
    /// A lib file written as an ES module, as read from disk.
    struct ModuleFile: Sendable {
        /// Its normalized path.
        var path: String
        /// Its entry name (`lib/rings`).
        var name: String
        var source: String
        var shape: ModuleShape
        /// The paths it imports (resolved; a specifier that does not resolve is left out and
        /// fails when the module is made).
        var imports: [String]
    }

    /// The lib file at `path` when it is written as a module; nil for a script (or a file that
    /// cannot be read, which the script path reports).
    func moduleFile(at path: String) -> ModuleFile? {
        let name = "lib/" + Self.macroName(forFile: (path as NSString).lastPathComponent)
        guard let source = try? SourceFile.read(path, macro: name), source.contains("import") || source.contains("export") else { return nil }
        let normalized = ModulePaths.normalized(path)
        let shape = try? engine.sync { runtime in try runtime.shapeCheck?.moduleShape(of: source, kind: "lib", file: normalized) }
        guard let shape = shape ?? nil, shape.kind != "script" else { return nil }
        let imports = (shape.imports ?? []).compactMap { try? ModulePaths.resolve($0.specifier, from: normalized, line: $0.line, column: $0.column) }
        return ModuleFile(path: normalized, name: name, source: source, shape: shape, imports: Array(Set(imports)).sorted())
    }

    /// Brings the live modules in line with `files` (every module file of lib/ as it is now):
    /// removed ones go, changed ones are reloaded with their importers, one swap each.
    func applyModules(_ files: [ModuleFile]) {
        moduleNames.withLock { $0 = Set(files.map(\.name)) }
        let changed = (try? engine.sync { runtime in self.applyModules(files, runtime: runtime) }) ?? false
        if changed { retryMacrosWithImports() }
    }

    private func applyModules(_ files: [ModuleFile], runtime: JSRuntime) -> Bool {
        let registry = runtime.modules
        var present: [String: ModuleFile] = [:]
        for file in files { present[file.path] = file }
        var changed = false
        for path in present.keys { registry.unavailable[path] = nil }
        // Gone, or no longer a module: its importers keep their versions and report the loss.
        for path in Array(registry.live.keys) where present[path] == nil {
            let importers = registry.importers(of: path)
            guard let old = registry.remove(path) else { continue }
            if let error = runtime.dispose(old) { logger.warning("dispose() of \(old.path) failed: \(error)") }
            registry.release(old)
            let reason = FileManager.default.fileExists(atPath: path) ? "\(relative(path)) is now a script (no import or export)" : "\(relative(path)) does not exist"
            registry.unavailable[path] = reason
            reportLost(path, reason: reason, importers: importers)
            changed = true
        }
        let graph = ModuleGraph(edges: present.mapValues(\.imports))
        for (path, cycle) in graph.cycles {
            guard let file = present[path] else { continue }
            let names = cycle.map { relative($0) }.joined(separator: " → ")
            let at = importPosition(in: file, of: cycle.count > 1 ? cycle[1] : path)
            let error = MacroError(code: .syntax, message: "import cycle: \(names)", macro: file.name, file: path, line: at?.line, column: at?.column)
            registry.unavailable[path] = "it is in an import cycle (\(names))"
            fail(file, error: error, dependents: [])
        }
        for path in graph.order {
            guard let file = present[path], graph.cycles[path] == nil else { continue }
            if let live = registry.live[path], live.source == file.source { continue }
            if swap(file, present: present, graph: graph, runtime: runtime) { changed = true }
        }
        return changed
    }

    /// Reloads `file` and every module and macro that imports it, as one swap; true when it went live.
    private func swap(_ file: ModuleFile, present: [String: ModuleFile], graph: ModuleGraph, runtime: JSRuntime) -> Bool {
        let registry = runtime.modules
        // The modules to remake: this one and its importers by the files as they are now.
        let modules = graph.order.filter { $0 == file.path || graph.reaches($0, file.path) }.filter { graph.cycles[$0] == nil }
        // The macros to remake: the live ones that import any of them.
        var importerFiles: Set<String> = []
        for path in modules { importerFiles.formUnion(registry.importers(of: path)) }
        let macroItems = state.locked { items in
            items.values.filter { item in item.method.map { importerFiles.contains(ModulePaths.normalized($0.file)) && $0.isLoaded } ?? false }
        }.sorted { $0.entry.name < $1.entry.name }
        let dependents = modules.filter { $0 != file.path }.compactMap { present[$0]?.name } + macroItems.map(\.entry.name)
        registry.begin()
        var prepared: [(Item, MacroMethod.Prepared)] = []
        var made: [ModuleRegistry.Module] = []
        do {
            for path in modules {
                guard let next = present[path] else { continue }
                try checkQuarantine(path, source: next.source, name: next.name)
                if next.shape.kind == "error" {
                    throw MacroError(code: .syntax, message: next.shape.message ?? "syntax error", macro: next.name, file: path, line: next.shape.line, column: next.shape.column)
                }
                let module = try runtime.makeModule(path: path, source: next.source, shape: next.shape, version: (registry.live[path]?.version ?? 0) + 1)
                registry.stage(module)
                made.append(module)
            }
            for item in macroItems {
                guard let method = item.method, let source = method.liveJavaScript else { continue }
                prepared.append((item, try method.prepare(javascript: source)))
            }
        } catch {
            for dropped in registry.abort() {
                if let error = runtime.dispose(dropped) { logger.warning("dispose() of a version that did not go live (\(dropped.path)) failed: \(error)") }
                registry.release(dropped)
            }
            var error = (error as? MacroError) ?? MacroError(code: .io, message: "\(error)", file: file.path)
            if error.file == nil { error.file = file.path }
            if registry.live[file.path] == nil {
                registry.unavailable[file.path] =
                    "\(relative(file.path)) does not load (\(relative(error.file ?? file.path))\(error.line.map { ":\($0)" } ?? "")\(error.column.map { ":\($0)" } ?? ""): \(error.message))"
            }
            fail(file, error: error, dependents: dependents)
            return false
        }
        for old in registry.commit() {
            if let error = runtime.dispose(old) { logger.warning("dispose() of \(old.path) v\(old.version) failed: \(error)") }
            registry.release(old)
        }
        for module in made {
            guard let next = present[module.path] else { continue }
            registry.unavailable[module.path] = nil
            libState.locked { $0[next.name] = MacroEntry(name: next.name, file: module.path, status: .ok, version: module.version) }
            libSources.locked { $0[next.name] = next.source }
            libEvaluated.locked { $0[module.path] = next.source }
        }
        var macroVersions: [(String, Int)] = []
        for (item, version) in prepared {
            guard let method = item.method else { continue }
            do {
                let number = try method.commit(version, runtime: runtime)
                var entry = item.entry
                entry.version = number
                if method.javascript == version.javascript { entry.status = .ok; entry.error = nil }
                let replaced = Item(entry: entry, method: method)
                state.locked { $0[entry.name] = replaced }
                macroVersions.append((entry.name, number))
            } catch {
                logger.warning("\(item.entry.name) could not go live with \(file.name): \(error)")
            }
        }
        let version = made.first { $0.path == file.path }?.version ?? 0
        loaded(file.name, version, dependents: dependents)
        for module in made where module.path != file.path {
            if let name = present[module.path]?.name { loaded(name, module.version) }
        }
        for (name, number) in macroVersions { loaded(name, number) }
        // Told after the swap: each file that uses the module, once (a first load is no reload).
        guard version > 1 else { return true }
        let told = modules.filter { $0 != file.path } + macroItems.compactMap { $0.method.map { ModulePaths.normalized($0.file) } }
        let info: MacroValue = ["module": .string(file.name), "file": .string(file.path), "version": .number(Double(version))]
        for error in runtime.runReloadHandlers(of: told, info: info) {
            logger.warning("a reload handler failed after \(file.name) v\(version): \(error)")
            engine.exceptionHandler(error)
        }
        triggers.modulesReloaded(macroVersions.map(\.0), module: file.name)
        return true
    }

    /// Marks a module's entry as failed (its last version, if any, stays live) and says so.
    private func fail(_ file: ModuleFile, error: MacroError, dependents: [String]) {
        var error = error
        error.macro = file.name
        let previous = libState.locked { $0[file.name] }
        let entry = MacroEntry(name: file.name, file: file.path, status: .error, error: error, version: previous?.version ?? 0)
        libState.locked { $0[file.name] = entry }
        libSources.locked { $0[file.name] = file.source }
        // Told once per new error (each lib change retries a broken module).
        guard previous?.error != error else { return }
        logger.warning("\(error)", metadata: ["lib": "\(file.name)"])
        notify(.failed(name: file.name, error: error, dependents: dependents))
    }

    /// The importers of a module that is gone: each macro among them reports it (the version it
    /// has stays live) until the module is back.
    private func reportLost(_ path: String, reason: String, importers: Set<String>) {
        let items = state.locked { items in items.values.filter { item in item.method.map { importers.contains(ModulePaths.normalized($0.file)) } ?? false } }
        for item in items {
            let error = MacroError(
                code: .syntax, message: "cannot import \(relative(path)): \(reason); the version that loaded last still serves",
                macro: item.entry.name, file: item.entry.file)
            var entry = item.entry
            entry.status = .error
            entry.error = error
            let replaced = Item(entry: entry, method: item.method)
            state.locked { $0[entry.name] = replaced }
            logger.warning("\(error)", metadata: ["macro": "\(entry.name)"])
            notify(.failed(name: entry.name, error: error, dependents: []))
        }
    }

    /// Loads again each macro whose file imports and did not load (or lost a module): a module
    /// that went live may be what it was missing.
    func retryMacrosWithImports() {
        let waiting = state.locked { items in items.values.filter { $0.entry.error != nil && $0.entry.error?.code != .quarantined }.map(\.entry) }
        for entry in waiting {
            guard let source = try? SourceFile.read(entry.file, macro: entry.name), source.contains("import") || source.contains("export") else { continue }
            load(file: entry.file, force: true)
        }
    }

    /// Where `file` imports `target` (the first such specifier).
    private func importPosition(in file: ModuleFile, of target: String) -> (line: Int, column: Int)? {
        for spec in file.shape.imports ?? [] {
            if (try? ModulePaths.resolve(spec.specifier, from: file.path, line: spec.line, column: spec.column)) == target { return (spec.line, spec.column) }
        }
        return nil
    }

    /// `path` relative to the macros directory (`lib/rings.js`).
    func relative(_ path: String) -> String { ModulePaths.relative(path, to: directory) }

    /// What each file imports and which files import it, by entry name (`bump`, `lib/rings`).
    public func dependencies() -> [String: (imports: [String], importers: [String])] {
        let edges = (try? engine.sync { runtime in runtime.modules.importsOf }) ?? [:]
        let macroNames = state.locked { items in
            Dictionary(items.values.map { (ModulePaths.normalized($0.entry.file), $0.entry.name) }, uniquingKeysWith: { a, _ in a })
        }
        func name(_ path: String) -> String {
            if let macro = macroNames[path] { return macro }
            let relative = self.relative(path)
            return relative.hasSuffix(".js") ? String(relative.dropLast(3)) : relative
        }
        var result: [String: (imports: [String], importers: [String])] = [:]
        for (file, imports) in edges {
            let from = name(file)
            for path in imports {
                let to = name(path)
                result[from, default: ([], [])].imports.append(to)
                result[to, default: ([], [])].importers.append(from)
            }
        }
        return result.mapValues { ($0.imports.sorted(), $0.importers.sorted()) }
    }
}

extension MacroLibrary {
    /// A file of `resources/` changed (`name`, relative to it): the code that read it is told
    /// (its reload handler runs, once), and so are the observers.
    public func resourceChanged(_ name: String) {
        let version = resourceVersions.withLock { versions -> Int in
            versions[name, default: 0] += 1
            return versions[name] ?? 1
        }
        let path = "\(resourcesDirectory)/\(name)"
        let info: MacroValue = ["resource": .string(name), "file": .string(path), "version": .number(Double(version))]
        let errors =
            (try? engine.sync { runtime -> [MacroError] in
                let readers = runtime.modules.resourceReaders[Resources.key(name)] ?? []
                return runtime.runReloadHandlers(of: readers.sorted().map(ModulePaths.normalized), info: info)
            }) ?? []
        for error in errors {
            logger.warning("a reload handler failed after resources/\(name) changed: \(error)")
            engine.exceptionHandler(error)
        }
        notify(.resourceChanged(name: "resources/" + name, version: version))
    }

    /// The files of `resources/` (names relative to it, sorted), with their sizes.
    public func resourceFiles() -> [(name: String, size: Int)] {
        let root = resourcesDirectory
        guard let enumerator = FileManager.default.enumerator(atPath: root) else { return [] }
        var found: [(String, Int)] = []
        while let name = enumerator.nextObject() as? String {
            var isDirectory: ObjCBool = false
            guard !Self.isHidden(name), FileManager.default.fileExists(atPath: root + "/" + name, isDirectory: &isDirectory), !isDirectory.boolValue else { continue }
            let size = (try? FileManager.default.attributesOfItem(atPath: root + "/" + name)[.size] as? NSNumber)?.intValue ?? 0
            found.append((name, size))
        }
        return found.sorted { $0.0 < $1.0 }
    }

    private static func isHidden(_ name: String) -> Bool {
        name.split(separator: "/").contains { $0.hasPrefix(".") || $0.hasSuffix("~") || $0.hasSuffix(".swp") }
    }

    /// What `macro.list` gives: every macro, then every lib file, then every resource; each file
    /// with its `imports` and `importers` (entry names) when it has any.
    public func listing() -> [MacroValue] {
        let graph = dependencies()
        func with(_ value: MacroValue, _ name: String) -> MacroValue {
            guard case .object(var fields) = value, let edges = graph[name] else { return value }
            if !edges.imports.isEmpty { fields["imports"] = .array(edges.imports.map { .string($0) }) }
            if !edges.importers.isEmpty { fields["importers"] = .array(edges.importers.map { .string($0) }) }
            return .object(fields)
        }
        let declared = Dictionary(triggers.status().map { ($0["name"].stringValue ?? "", $0) }, uniquingKeysWith: { a, _ in a })
        let macros = entries.map { entry -> MacroValue in
            let value = with(entry.listJSON(kind: "macro"), entry.name)
            guard let status = declared[entry.name], case .object(var fields) = value else { return value }
            fields["triggers"] = .array((status["triggers"].arrayValue ?? []).map { $0["spec"] })
            fields["mode"] = status["mode"]
            return .object(fields)
        }
        let modules = moduleNames.withLock { $0 }
        let libs = libEntries.map { entry -> MacroValue in
            let value = with(entry.listJSON(kind: "lib"), entry.name)
            guard modules.contains(entry.name), case .object(var fields) = value else { return value }
            fields["module"] = true
            return .object(fields)
        }
        let resources: [MacroValue] = resourceFiles().map { file in
            [
                "name": .string("resources/" + file.name), "kind": "resource", "status": "ok", "file": .string("\(resourcesDirectory)/\(file.name)"),
                "version": .number(Double(resourceVersions.withLock { $0[file.name] ?? 0 })), "size": .number(Double(file.size)),
            ]
        }
        return macros + libs + resources
    }
}
