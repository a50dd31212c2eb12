/// The functions a JavaScript source defines: each one's name (as JavaScriptCore reports it in a
/// sampled frame), the line it starts on and the line it ends on.
///
/// The profiler names a frame `function (file:line)` with the line where the function is
/// *defined*, as Chrome's `.cpuprofile` and speedscope do, so that every sample of a function
/// lands in one frame. JavaScriptCore's samples carry the line being executed in the frame (the
/// call site in a caller), and no line at all in optimized (FTL) code; the definition is the
/// innermost function of that name whose lines contain the executed line, or the only one of
/// that name in the file.
///
/// Names follow the language's own naming (ECMAScript's `SetFunctionName`), which is what the
/// sampled frames carry: `function hot()`, `hot = function () {}`, `hot: function () {}`,
/// `hot = () => ...`, `"hot": ...`, methods `hot() {}`, `get hot() {}` (named `get hot`), a
/// class's `constructor` (named after the class). Functions without a name are named ""
/// (methods with a computed `[key]` are not found: their frames keep the executed line).
struct FunctionDefinitions: Equatable {
    /// One function.
    struct Definition: Equatable {
        /// Its name ("" for an anonymous function).
        var name: String
        /// The line where it starts: its `function`/`async` keyword, its name, or its parameters.
        var line: Int
        /// The line of its closing brace (of the end of an arrow's expression body).
        var endLine: Int
    }

    /// Every function, in source order.
    let all: [Definition]

    /// Finds the functions of `source`. `topLevelName` names the outermost function (a macro
    /// file's one function expression, which the engine registers under the macro's name).
    init(source: String, topLevelName: String? = nil) {
        let lexed = JSTokens(source)
        var found = Finder(lexed).definitions()
        if let topLevelName, let first = found.firstIndex(where: { $0.topLevel }) { found[first].definition.name = topLevelName }
        all = found.map(\.definition)
    }

    /// The line where the function named `name` that was executing `line` is defined: the
    /// innermost one of that name containing the line, else (no line) the only one of that name.
    /// Nil when that is not known.
    func definitionLine(of name: String, executing line: Int?) -> Int? {
        let named = all.filter { $0.name == name }
        guard let line else { return named.count == 1 ? named[0].line : nil }
        return named.filter { $0.line <= line && line <= $0.endLine }
            .min { ($0.endLine - $0.line, -$0.line) < ($1.endLine - $1.line, -$1.line) }?.line
    }
}

/// The pass over the tokens that recognises function definitions.
private struct Finder {
    struct Found {
        var definition: FunctionDefinitions.Definition
        /// Not inside any bracket: a file's top-level function.
        var topLevel: Bool
    }

    let lexed: JSTokens
    var tokens: [JSTokens.Token] { lexed.tokens }

    init(_ lexed: JSTokens) { self.lexed = lexed }

    private static let notMethods: Set<String> = [
        "if", "for", "while", "switch", "catch", "with", "function", "return", "typeof", "await", "yield", "new", "delete", "void",
    ]

    func text(_ index: Int) -> String? { index >= 0 && index < tokens.count ? tokens[index].text : nil }
    func isPunctuator(_ index: Int, _ text: String) -> Bool {
        index >= 0 && index < tokens.count && tokens[index].kind == .punctuator && tokens[index].text == text
    }
    func isIdentifier(_ index: Int) -> Bool { index >= 0 && index < tokens.count && tokens[index].kind == .identifier }

    func definitions() -> [Found] {
        var found: [Found] = []
        var depth = 0
        for index in tokens.indices {
            let token = tokens[index]
            if token.kind == .punctuator, ["(", "[", "{"].contains(token.text) { depth += 1 }
            if token.kind == .punctuator, [")", "]", "}"].contains(token.text) { depth = max(0, depth - 1) }
            let definition: FunctionDefinitions.Definition?
            if token.kind == .identifier, token.text == "function" {
                definition = functionKeyword(at: index)
            } else if token.kind == .punctuator, token.text == "=>" {
                definition = arrow(at: index)
            } else if token.kind == .identifier || token.kind == .literal {
                definition = method(at: index)
            } else {
                definition = nil
            }
            if let definition { found.append(Found(definition: definition, topLevel: depth == 0)) }
        }
        return found
    }

    /// `function NAME (...) {...}`, `function* NAME`, `async function`, or an anonymous
    /// `function (...) {...}` named by what it is assigned to.
    func functionKeyword(at index: Int) -> FunctionDefinitions.Definition? {
        var next = index + 1
        if isPunctuator(next, "*") { next += 1 }
        var name: String?
        if isIdentifier(next), !isPunctuator(next, "(") {
            name = tokens[next].text
            next += 1
        }
        guard isPunctuator(next, "("), let close = lexed.partner[next], isPunctuator(close + 1, "{"), let end = lexed.partner[close + 1] else {
            return nil
        }
        let start = text(index - 1) == "async" ? index - 1 : index
        return .init(name: name ?? inferredName(before: start), line: tokens[start].line, endLine: tokens[end].line)
    }

    /// `(a, b) => ...`, `a => ...`, `async (...) => ...`, named by what it is assigned to.
    func arrow(at index: Int) -> FunctionDefinitions.Definition? {
        var start: Int
        if isPunctuator(index - 1, ")"), let open = lexed.partner[index - 1] {
            start = open
        } else if isIdentifier(index - 1) {
            start = index - 1
        } else {
            return nil
        }
        if text(start - 1) == "async", tokens[start - 1].kind == .identifier { start -= 1 }
        let end: Int
        if isPunctuator(index + 1, "{"), let close = lexed.partner[index + 1] {
            end = close
        } else {
            end = expressionEnd(after: index)
        }
        return .init(name: inferredName(before: start), line: tokens[start].line, endLine: tokens[end].line)
    }

    /// `NAME (...) {...}` in an object literal or a class body, with `get`/`set`/`static`/
    /// `async`/`*` before it.
    func method(at index: Int) -> FunctionDefinitions.Definition? {
        let token = tokens[index]
        guard isPunctuator(index + 1, "("), let close = lexed.partner[index + 1], isPunctuator(close + 1, "{"),
            let end = lexed.partner[close + 1]
        else { return nil }
        if token.kind == .identifier, Self.notMethods.contains(token.text) { return nil }
        var start = index
        var prefix = ""
        while let before = text(start - 1), tokens[start - 1].kind == .identifier || before == "*",
            ["get", "set", "static", "async", "*"].contains(before)
        {
            if before == "get" || before == "set" { prefix = before + " " }
            start -= 1
        }
        // A method follows the start of its object or class body, or the end of the member before it.
        guard start == 0 || ["{", ",", ";", "}"].contains(text(start - 1) ?? "") else { return nil }
        guard let body = lexed.enclosingBrace[index] else { return nil }
        var name = token.text
        if name == "constructor", prefix.isEmpty, let className = className(ofBody: body) { name = className }
        return .init(name: prefix + name, line: tokens[start].line, endLine: tokens[end].line)
    }

    /// The class whose body opens at `brace`: `class NAME ... {`, or `NAME = class ... {`.
    func className(ofBody brace: Int) -> String? {
        var index = brace - 1
        while index >= 0, !(isIdentifier(index) && tokens[index].text == "class") {
            // `extends Base`, `extends mixin(A)`: stay on this line of tokens, not past a statement.
            if isPunctuator(index, ";") || isPunctuator(index, "{") || isPunctuator(index, "}") { return nil }
            index -= 1
        }
        guard index >= 0 else { return nil }
        if isIdentifier(index + 1), tokens[index + 1].text != "extends" { return tokens[index + 1].text }
        let inferred = inferredName(before: index)
        return inferred.isEmpty ? nil : inferred
    }

    /// The name an anonymous function gets from where it stands: `NAME = `, `var NAME = `,
    /// `NAME: ` in an object literal (`"NAME": ` too). "" otherwise.
    func inferredName(before start: Int) -> String {
        guard let before = text(start - 1), start - 1 >= 0, tokens[start - 1].kind == .punctuator else { return "" }
        if before == "=", isIdentifier(start - 2), !isPunctuator(start - 3, ".") {
            return tokens[start - 2].text
        }
        if before == ":", start - 2 >= 0, isPunctuator(start - 3, "{") || isPunctuator(start - 3, ",") {
            return tokens[start - 2].text
        }
        return ""
    }

    /// The last token of an arrow function's expression body: before the first `,`, `;` or
    /// closing bracket at its own level.
    func expressionEnd(after arrow: Int) -> Int {
        var index = arrow + 1
        var last = arrow
        while index < tokens.count {
            let token = tokens[index]
            if token.kind == .punctuator {
                if [",", ";", ")", "]", "}"].contains(token.text) { break }
                if ["(", "[", "{"].contains(token.text), let close = lexed.partner[index] {
                    last = close
                    index = close + 1
                    continue
                }
            }
            last = index
            index += 1
        }
        return last
    }
}
