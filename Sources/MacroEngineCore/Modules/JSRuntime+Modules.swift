import CJavaScriptCore
import Foundation

extension JSRuntime {
    /// Makes a new version of the module at `path` from `source` (already read by acorn as
    /// `shape`) and stages it: its imports resolve to staged or live modules, and its top level
    /// runs once, armed like a lib script's and owned by its file. Throws the error at its
    /// `file:line:column` (a syntax error, a missing module or export, a throw, a stop).
    func makeModule(path: String, source: String, shape: ModuleShape, version: Int) throws -> ModuleRegistry.Module {
        guard let engine else { throw MacroError.engineGone }
        var arguments = RootedValues(context.ref, capacity: shape.params?.count ?? 0)
        let imports = try linkArguments(shape, file: path, into: &arguments)
        let text = shape.text ?? ""
        lineOneShift[path] = shape.shift ?? 0
        try checkSyntax(text, file: path)
        let pair: JSValue
        do {
            pair = try loading(path, source: source) {
                try engine.enter(self, .script(macro: nil, timeLimit: nil)) {
                    let factory = try evaluateRaw(text, file: path)
                    guard let object = factory.objectRef else { throw MacroError(code: .notAFunction, message: "a module's wrapper is not a function", file: path) }
                    nameTopLevel(object)
                    return try arguments.withArguments { try call(object, arguments: UnsafeBufferPointer(start: $0, count: $1), macro: nil) }
                }
            }
        } catch var error as MacroError where error.code == .timeout || error.code == .memoryLimit {
            error.message = JSRuntime.stoppedAtLoad(error).replacingOccurrences(
                of: "a macro file should only define its function", with: "a module's top level runs once per version")
            throw error
        }
        let namespace = try call(try namespaceMaker(), arguments: [pair.ref], macro: nil)
        guard let object = namespace.objectRef else { throw MacroError(code: .io, message: "no namespace was made for the module", file: path) }
        return ModuleRegistry.Module(path: path, source: source, imports: imports, exports: shape.exports ?? [], namespace: object, version: version)
    }

    /// A macro file written with imports (or as `export default function`): its function, made
    /// with its imports bound, and the paths it imports. Loading it runs none of its code: the
    /// wrapper only returns the function.
    func moduleMacroFunction(_ shape: ModuleShape, source: String, file: String, macro: String) throws -> (function: JSValue, imports: [String]) {
        guard let engine else { throw MacroError.engineGone }
        var arguments = RootedValues(context.ref, capacity: shape.params?.count ?? 0)
        let imports = try linkArguments(shape, file: file, into: &arguments)
        let text = shape.text ?? ""
        lineOneShift[file] = shape.shift ?? 0
        try checkSyntax(text, file: file)
        let value = try loading(file, source: source, macro: macro) {
            try engine.enter(self, .housekeeping(macro: macro, timeLimit: nil)) {
                let factory = try evaluateRaw(text, file: file, macro: macro)
                guard let object = factory.objectRef else { throw MacroError(code: .notAFunction, message: "a macro's wrapper is not a function", file: file) }
                return try arguments.withArguments { try call(object, arguments: UnsafeBufferPointer(start: $0, count: $1), macro: macro) }
            }
        }
        evaluatedSources[file] = (text, macro)
        guard value.isFunction else {
            throw MacroError(
                code: .notAFunction, message: "the macro file's default export is \(value.typeDescription), not a function", macro: macro, file: file, line: 1, column: 1)
        }
        return (value, imports)
    }

    /// Appends the wrapper's arguments for `shape` to `arguments` (each import's namespace, or
    /// the export it names) and returns the paths imported. Throws at the import's position when a module is not
    /// there or lacks the export.
    private func linkArguments(_ shape: ModuleShape, file: String, into arguments: inout RootedValues) throws -> [String] {
        let imports = shape.imports ?? []
        let paths = try imports.map { try ModulePaths.resolve($0.specifier, from: file, line: $0.line, column: $0.column) }
        for param in shape.params ?? [] {
            guard let index = param.module else {
                arguments.append(JSValueMakeUndefined(context.ref))
                continue
            }
            let spec = imports[index]
            guard let module = modules.module(at: paths[index]) else {
                let path = paths[index]
                let reason =
                    modules.unavailable[path]
                    ?? (FileManager.default.fileExists(atPath: path)
                        ? "\(path) is not a module (modules are the .js files of lib/ with an import or export)" : "\(path) does not exist")
                throw MacroError(code: .syntax, message: "cannot import '\(spec.specifier)': \(reason)", file: file, line: spec.line, column: spec.column)
            }
            guard let name = param.imported else {
                arguments.append(module.namespace)
                continue
            }
            let has = withJSString(name) { JSObjectHasProperty(context.ref, module.namespace, $0) }
            guard has else {
                let exports = module.exports.isEmpty ? "it exports nothing" : "it exports: \(module.exports.joined(separator: ", "))"
                throw MacroError(
                    code: .syntax, message: "'\(spec.specifier)' has no export named '\(name)' (\(exports))",
                    file: file, line: param.line, column: param.column)
            }
            var exception: JSValueRef?
            let value = withJSString(name) { JSObjectGetProperty(context.ref, module.namespace, $0, &exception) }
            if let exception { throw macroError(fromException: exception, macro: nil, file: file) }
            arguments.append(value ?? JSValueMakeUndefined(context.ref))
        }
        return Array(Set(paths)).sorted()
    }

    /// `makeNamespace([getters, stars])`: a frozen object without prototype whose properties read
    /// the module's exports (and the star re-exports' names it does not export itself).
    private func namespaceMaker() throws -> JSObjectRef {
        if let namespaceMakerRef { return namespaceMakerRef }
        let maker = try evaluateRaw(
            """
            (function () {
              "use strict";
              var create = Object.create, define = Object.defineProperty, describe = Object.getOwnPropertyDescriptors;
              var keys = Object.keys, freeze = Object.freeze, tag = Symbol.toStringTag;
              return function (pair) {
                var ns = create(null), own = describe(pair[0]), names = keys(own), stars = pair[1];
                for (var i = 0; i < names.length; i++) define(ns, names[i], { get: own[names[i]].get, enumerable: true });
                for (var s = 0; s < stars.length; s++) {
                  var star = stars[s], starNames = keys(star);
                  for (var j = 0; j < starNames.length; j++) {
                    var name = starNames[j];
                    if (name !== "default" && !(name in ns)) define(ns, name, { get: (function (from, key) { return function () { return from[key]; }; })(star, name), enumerable: true });
                  }
                }
                define(ns, tag, { value: "Module" });
                return freeze(ns);
              };
            })()
            """, file: nil)
        guard let object = maker.objectRef else { throw MacroError(code: .io, message: "the namespace maker did not load") }
        JSValueProtect(context.ref, object)
        namespaceMakerRef = object
        return object
    }

    /// Runs the `dispose` export of a version being dropped, under the watchdog and owned by its
    /// file; returns its error, if any (the version is dropped either way).
    func dispose(_ module: ModuleRegistry.Module) -> MacroError? {
        guard let engine, module.exports.contains("dispose") else { return nil }
        let function = withJSString("dispose") { JSObjectGetProperty(context.ref, module.namespace, $0, nil) }
        guard let function, JSValueIsObject(context.ref, function), let object = JSValueToObject(context.ref, function, nil), JSObjectIsFunction(context.ref, object) else {
            return nil
        }
        do {
            _ = try loading(module.path, source: module.source) {
                try engine.enter(self, .script(macro: nil, timeLimit: nil)) { try call(object, arguments: [], macro: nil) }
            }
            return nil
        } catch let error as MacroError {
            return error
        } catch {
            return MacroError(code: .threw, message: "\(error)", file: module.path)
        }
    }

    /// Calls the reload handler of each of `files` that has one, with `info`, each under the
    /// watchdog and owned by the code that registered it; returns the errors.
    func runReloadHandlers(of files: [String], info: MacroValue) -> [MacroError] {
        guard let engine else { return [] }
        var errors: [MacroError] = []
        for file in files {
            guard let handler = modules.handlers[file] else { continue }
            do {
                _ = try loading(as: handler.owner) {
                    try engine.enter(self, .script(macro: handler.owner.macro, timeLimit: nil)) {
                        let argument = try jsValue(info)
                        return try call(handler.function, arguments: [argument.ref], macro: handler.owner.macro)
                    }
                }
            } catch var error as MacroError {
                if error.file == nil { error.file = file }
                errors.append(error)
            } catch {
                errors.append(MacroError(code: .threw, message: "\(error)", file: file))
            }
        }
        return errors
    }
}
