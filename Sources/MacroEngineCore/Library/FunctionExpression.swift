import CJavaScriptCore

extension JSRuntime {
    /// Evaluates a macro source — one function expression, optionally after comments and with
    /// one trailing `;` — and returns the function. Positions in errors are the file's own: the
    /// one-character wrapper on line 1 is taken back out of the column.
    func functionExpression(_ source: String, file: String, macro: String) throws -> JSValue {
        try macroFunction(source, file: file, macro: macro).function
    }

    /// ``functionExpression(_:file:macro:)``, and the paths of the modules the file imports
    /// (empty for a file without imports).
    func macroFunction(_ source: String, file: String, macro: String) throws -> (function: JSValue, imports: [String]) {
        if source.contains("import") || source.contains("export"), let shape = try shapeCheck?.moduleShape(of: source, kind: "macro", file: file) {
            switch shape.kind {
            case "error":
                throw MacroError(code: .syntax, message: shape.message ?? "syntax error", macro: macro, file: file, line: shape.line, column: shape.column)
            case "macro":
                do {
                    let declaration = try triggerDeclaration(shape, file: file, macro: macro)
                    let made = try moduleMacroFunction(shape, source: source, file: file, macro: macro)
                    modules.madeTriggers[ModulePaths.normalized(file)] = declaration
                    let hidden = JSPropertyAttributes(kJSPropertyAttributeDontEnum | kJSPropertyAttributeReadOnly)
                    withJSString("displayName") { key in
                        JSObjectSetProperty(context.ref, made.function.objectRef!, key, context.string(macro).ref, hidden, nil)
                    }
                    return made
                } catch var error as MacroError {
                    if error.file == nil || error.file == "" { error.file = file }
                    error.macro = macro
                    if error.code == .timeout || error.code == .memoryLimit { error.message = Self.stoppedAtLoad(error) }
                    throw error
                }
            default:
                break
            }
        }
        let function = try scriptFunctionExpression(source, file: file, macro: macro)
        modules.madeTriggers[ModulePaths.normalized(file)] = nil
        return (function, [])
    }

    /// The triggers `source` (a macro file) declares, read without running anything; nil for
    /// none, or for a file that does not parse.
    func declaredTriggers(in source: String, file: String, macro: String) -> TriggerDeclaration? {
        guard source.contains("export"), let shape = try? shapeCheck?.moduleShape(of: source, kind: "macro", file: file), shape.kind == "macro" else { return nil }
        return try? triggerDeclaration(shape, file: file, macro: macro)
    }

    /// The triggers a macro file declares (`export const triggers`, `mode`), nil for none;
    /// throws `.syntax` at the declaration for one that is not valid.
    private func triggerDeclaration(_ shape: ModuleShape, file: String, macro: String) throws -> TriggerDeclaration? {
        guard shape.triggers != nil || shape.mode != nil else { return nil }
        func parse(_ text: String?) throws -> MacroValue? {
            guard let text else { return nil }
            return try JSONParser.parse(text)
        }
        let declaration = try TriggerDeclaration.read(
            triggers: try parse(shape.triggers), mode: try parse(shape.mode), channels: progressChannels, file: file, macro: macro,
            at: (shape.dataLine ?? 1, shape.dataColumn ?? 1))
        return declaration.triggers.isEmpty && shape.mode == nil ? nil : declaration
    }

    private func scriptFunctionExpression(_ source: String, file: String, macro: String) throws -> JSValue {
        var trimmed = Substring(source)
        while let last = trimmed.last, last.isWhitespace { trimmed.removeLast() }
        var body = trimmed
        if body.last == ";" { body.removeLast() }
        let wrapped = "(" + body + "\n)"
        lineOneShift[file] = 1
        do {
            try checkSyntax(wrapped, file: file)
            // Nothing of a file runs unless it is one function expression (its evaluation then
            // only makes the function): checked by a parser, not by running it.
            if let finding = try shapeCheck?.finding(in: wrapped, file: file) {
                let column = finding.column.map { finding.line == 1 ? max(1, $0 - 1) : $0 }
                throw MacroError(
                    code: finding.parserLimit ? .syntax : .notAFunction,
                    message: finding.parserLimit
                        ? "the engine's parser for checking macro files (acorn) cannot read this file, although JavaScriptCore can: \(finding.message); the file is not loaded"
                        : finding.message,
                    macro: macro, file: file, line: finding.line, column: column)
            }
            // Evaluating a function expression only makes the function; armed like any other run
            // all the same, and named for the stall watch.
            let value = try loading(file, source: source, macro: macro) {
                guard let engine else { throw MacroError.engineGone }
                return try engine.enter(self, .housekeeping(macro: macro, timeLimit: nil)) { try evaluateRaw(wrapped, file: file, macro: macro) }
            }
            evaluatedSources[file] = (wrapped, macro)
            guard value.isFunction else {
                let (line, column) = FunctionExpression.firstTokenPosition(in: source)
                throw MacroError(
                    code: .notAFunction,
                    message: "a macro file must hold one function expression, e.g. function() { ... }; this one evaluates to \(value.typeDescription)",
                    macro: macro, file: file, line: line, column: column)
            }
            // Stack frames show `NAME@file:line:col` (JSC reads displayName for anonymous functions).
            let hidden = JSPropertyAttributes(kJSPropertyAttributeDontEnum | kJSPropertyAttributeReadOnly)
            withJSString("displayName") { key in
                JSObjectSetProperty(context.ref, value.objectRef!, key, context.string(macro).ref, hidden, nil)
            }
            return value
        } catch var error as MacroError {
            if error.file == nil || error.file == "" { error.file = file }
            error.macro = macro
            if error.code == .timeout || error.code == .memoryLimit { error.message = Self.stoppedAtLoad(error) }
            // A file that parses as a script but not as one expression holds more than the
            // function (a helper after it, a `var`): JavaScriptCore's "Expected ')' to end a
            // compound expression" says nothing of that, so say what to do instead.
            if error.code == .syntax, let line = error.line, (try? checkSyntax(String(trimmed), file: nil)) != nil {
                error.code = .notAFunction
                error.errorName = nil
                error.message =
                    "a macro file holds one function, named like the file, and nothing after it; line \(line) starts another statement. "
                    + "Move helpers to macros/lib/: a plain script there is seen by every macro, a module is imported "
                    + "(`import { helper } from \"./lib/NAME.js\"`)"
                throw error
            }
            // An error on the wrapper's closing line means the file ended too early.
            let bodyLines = trimmed.split(separator: "\n", omittingEmptySubsequences: false)
            if error.code == .syntax, let line = error.line, line > bodyLines.count {
                error.line = bodyLines.count
                error.column = (bodyLines.last?.count ?? 0) + 1
                error.message = "unexpected end of file (a closing '}' or ')' may be missing)"
            }
            throw error
        }
    }
}

extension JSRuntime {
    /// The message for code that a file runs while it loads and that was stopped.
    static func stoppedAtLoad(_ error: MacroError) -> String {
        "stopped while loading: the file's own code \(error.code == .timeout ? "ran past the time limit (\(error.message.replacingOccurrences(of: "timed out after ", with: "")))" : "passed the memory limit (\(error.message))"); a macro file should only define its function"
    }

    /// Runs `body` (an evaluation of `file` at load) with the file named in ``occupancy``.
    /// The file is the owner of what its code runs and arms (``CodeOwner``).
    func loading<T>(_ file: String, source: String, macro: String? = nil, _ body: () throws -> T) throws -> T {
        try loading(as: CodeOwner(file: file, source: source, macro: macro), body)
    }

    /// ``loading(_:source:macro:_:)`` for a known owner (a reload handler's file).
    func loading<T>(as owner: CodeOwner, _ body: () throws -> T) throws -> T {
        let outermost = entryDepth == 0
        if outermost { occupancy.setLoading(owner.file, hash: owner.hash) }
        let previousOwner = currentOwner
        if outermost { currentOwner = owner }
        defer {
            if outermost { occupancy.setLoading(nil) }
            currentOwner = previousOwner
        }
        return try body()
    }
}

enum FunctionExpression {
    /// The one-based line and column of the first character that is not whitespace or a comment.
    static func firstTokenPosition(in source: String) -> (Int, Int) {
        var line = 1, column = 1
        var chars = Array(source.unicodeScalars)[...]
        func advance() {
            if chars.first == "\n" { line += 1; column = 1 } else { column += 1 }
            chars = chars.dropFirst()
        }
        while let c = chars.first {
            if c == " " || c == "\t" || c == "\n" || c == "\r" { advance(); continue }
            if c == "/", chars.dropFirst().first == "/" {
                while let d = chars.first, d != "\n" { advance() }
                continue
            }
            if c == "/", chars.dropFirst().first == "*" {
                advance(); advance()
                while !chars.isEmpty, !(chars.first == "*" && chars.dropFirst().first == "/") { advance() }
                if !chars.isEmpty { advance(); advance() }
                continue
            }
            break
        }
        return (line, column)
    }
}
