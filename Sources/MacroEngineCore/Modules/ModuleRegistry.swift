import CJavaScriptCore

/// The engine's ES modules: the live version of each (its namespace), what each file imports, and
/// the reload handlers. Engine state, on the engine's loop with the ``JSRuntime`` that owns it.
///
/// A reload is a transaction: ``begin()`` opens a staged set, new versions are made into it
/// (an import resolves to the staged version first), and ``commit()`` swaps every staged version
/// in at once, or ``abort()`` drops them, so either every dependent goes live on the new
/// version or none does.
final class ModuleRegistry {
    /// One version of a module.
    final class Module {
        /// Its normalized path.
        let path: String
        /// The source it was made from.
        let source: String
        /// The paths it imports.
        let imports: [String]
        /// The names it exports.
        let exports: [String]
        /// Its namespace (protected while held here).
        let namespace: JSObjectRef
        /// 1 for the first version that went live.
        let version: Int

        init(path: String, source: String, imports: [String], exports: [String], namespace: JSObjectRef, version: Int) {
            self.path = path
            self.source = source
            self.imports = imports
            self.exports = exports
            self.namespace = namespace
            self.version = version
        }
    }

    /// The live modules, by path.
    private(set) var live: [String: Module] = [:]
    /// The versions made by an open transaction.
    private(set) var staged: [String: Module]?
    /// What each live file imports (modules and macros), by path.
    private(set) var importsOf: [String: [String]] = [:]
    /// Staged changes of ``importsOf``.
    private var stagedImports: [String: [String]] = [:]
    /// A reload handler and the code that registered it.
    struct Handler {
        let function: JSObjectRef
        let owner: CodeOwner
    }
    /// One reload handler per file (`onReload`), protected.
    private(set) var handlers: [String: Handler] = [:]
    private var stagedHandlers: [String: Handler] = [:]
    /// Why a path has no module to import (missing, a script, broken), set by the library.
    var unavailable: [String: String] = [:]
    /// The triggers each live macro file declares (a file with none is absent), and those of
    /// the last version made, until it is installed.
    private(set) var triggers: [String: TriggerDeclaration] = [:]
    var madeTriggers: [String: TriggerDeclaration] = [:]

    /// Makes the triggers of `file`'s last made version its live ones.
    func installTriggers(of file: String) {
        triggers[file] = madeTriggers.removeValue(forKey: file)
    }

    /// The files whose code read each resource, by resource name.
    var resourceReaders: [String: Set<String>] = [:]

    private let context: JSContextRef

    init(context: JSContextRef) { self.context = context }

    /// True while a transaction is open.
    var isStaging: Bool { staged != nil }

    /// The version an import of `path` gets: the staged one, else the live one.
    func module(at path: String) -> Module? { staged?[path] ?? live[path] }

    /// Opens a transaction.
    func begin() {
        staged = [:]
        stagedImports = [:]
        stagedHandlers = [:]
    }

    /// Adds a new version to the open transaction (its namespace is protected here).
    func stage(_ module: Module) {
        JSValueProtect(context, module.namespace)
        staged?[module.path] = module
        stagedImports[module.path] = module.imports
    }

    /// Records what `file` imports; staged while a transaction is open.
    func setImports(of file: String, _ paths: [String]) {
        if isStaging { stagedImports[file] = paths } else { importsOf[file] = paths.isEmpty ? nil : paths }
    }

    /// Registers `file`'s reload handler (replacing its previous one); staged while a transaction is open.
    func setHandler(_ handler: Handler) {
        JSValueProtect(context, handler.function)
        let file = ModulePaths.normalized(handler.owner.file)
        if isStaging {
            if let old = stagedHandlers.updateValue(handler, forKey: file) { JSValueUnprotect(context, old.function) }
        } else if let old = handlers.updateValue(handler, forKey: file) {
            JSValueUnprotect(context, old.function)
        }
    }

    /// Drops `file`'s reload handler (its file changed or is gone).
    func dropHandler(of file: String) {
        if let old = handlers.removeValue(forKey: ModulePaths.normalized(file)) { JSValueUnprotect(context, old.function) }
    }

    /// Swaps the staged versions in; returns the versions they replaced (for `dispose`).
    func commit() -> [Module] {
        guard let staged else { return [] }
        var replaced: [Module] = []
        for (path, module) in staged {
            if let old = live.updateValue(module, forKey: path) { replaced.append(old) }
        }
        for (file, paths) in stagedImports { importsOf[file] = paths.isEmpty ? nil : paths }
        for (file, handler) in stagedHandlers {
            if let old = handlers.updateValue(handler, forKey: file) { JSValueUnprotect(context, old.function) }
        }
        self.staged = nil
        stagedImports = [:]
        stagedHandlers = [:]
        return replaced
    }

    /// Drops the staged versions; returns them (for `dispose`: their top level ran).
    func abort() -> [Module] {
        let dropped = Array((staged ?? [:]).values)
        for handler in stagedHandlers.values { JSValueUnprotect(context, handler.function) }
        staged = nil
        stagedImports = [:]
        stagedHandlers = [:]
        return dropped
    }

    /// Releases a version no longer live nor staged.
    func release(_ module: Module) { JSValueUnprotect(context, module.namespace) }

    /// Removes the live version of `path` (its file is gone, and nothing live imports it).
    func remove(_ path: String) -> Module? {
        importsOf[path] = nil
        dropHandler(of: path)
        return live.removeValue(forKey: path)
    }

    /// Forgets what `file` imports (a macro removed).
    func forget(_ file: String) {
        importsOf[file] = nil
        dropHandler(of: file)
    }

    /// The files that import `path`, directly or through other modules (not `path` itself),
    /// by the live graph.
    func importers(of path: String) -> Set<String> {
        var found: Set<String> = []
        var queue = [path]
        while let next = queue.popLast() {
            for (file, imports) in importsOf where imports.contains(next) && !found.contains(file) && file != path {
                found.insert(file)
                queue.append(file)
            }
        }
        return found
    }
}
