import MacroBase

/// One REPL input made into scripts the engine can run as a call, as Node's REPL does for
/// top-level `await`: the input becomes the body of an async function (so `await` works at the
/// top level), its last expression statement is returned (so `var x = await p; x + 1` shows
/// `x + 1`), and its top-level declarations assign globals (so `var`, `let`, `const`, `function`
/// and `class` outlive the line, as in a script). The function's result is the value shown, as
/// `console.log` formats it (``ConsoleFormat``), with strings quoted and `progress` as its values.
///
/// ``forms(functionName:)`` gives the scripts from the most to the least rewritten; the input
/// as written comes last (and alone when the input ends inside brackets, a template literal or
/// a comment). A form the engine cannot parse runs nothing, so the first one that
/// parses is run, and when none does, the last one's syntax error is the input's.
package struct ReplProgram {
    /// The input as typed.
    package let source: String
    /// Its tokens.
    package let scan: ReplScan
    /// The top-level statements, as ranges of token indices.
    package let statements: [Range<Int>]

    /// Words that begin a statement that is not an expression (never returned as the value).
    static let statementWords: Set<String> = [
        "if", "for", "while", "do", "switch", "try", "return", "throw", "break", "continue", "with", "debugger",
        "import", "export", "var", "let", "const", "function", "class",
    ]

    /// Reads `source`.
    package init(_ source: String) {
        self.source = source
        scan = ReplScan(source)
        statements = Self.split(scan)
    }

    /// Lines in the input: a syntax error reported past them is in the wrapper's closing text.
    package var lineCount: Int { source.utf8.reduce(1) { $0 + ($1 == UInt8(ascii: "\n") ? 1 : 0) } }

    /// A script to try, and what it changed in the input.
    package struct Form {
        /// The script: its value is the async function.
        package let script: String
        /// The changes made to the input, at offsets in the input.
        let edits: [Edit]
        /// The input's text.
        let input: [UInt8]

        /// A column on `line` of the input as it is in the script, as it is in the input:
        /// the text inserted before it on that line taken away.
        package func originalColumn(_ column: Int, line: Int) -> Int {
            var start = 0
            var current = 1
            while current < line, let newline = input[start...].firstIndex(of: UInt8(ascii: "\n")) {
                start = newline + 1
                current += 1
            }
            let end = input[start...].firstIndex(of: UInt8(ascii: "\n")) ?? input.count
            var shift = 0
            for edit in edits.sorted(by: { $0.offset < $1.offset }) where edit.offset >= start && edit.offset <= end {
                let at = edit.offset - start + 1 + shift
                guard column >= at + edit.text.utf8.count else { break }
                shift += edit.text.utf8.count - edit.length
            }
            return max(1, column - shift)
        }
    }

    /// The scripts to try, in order; each one's value is an async function named `functionName`
    /// that runs the input and returns the text to show. The input starts on each script's
    /// second line, so a line in one of them is the input's line plus one.
    package func forms(functionName: String) -> [Form] {
        let verbatim = Form(script: wrap(source, prelude: [], exports: [], functionName: functionName), edits: [], input: scan.bytes)
        // Input that ends inside brackets is not rewritten: `return (foo(1,` + `\n)` would run.
        if scan.endsOpen { return [verbatim] }
        let declarations = hoisting()
        var forms: [Form] = []
        if let value = returningLast() {
            let edits = declarations.edits + value
            forms.append(
                Form(script: wrap(apply(edits), prelude: declarations.names, exports: declarations.functions, functionName: functionName), edits: edits, input: scan.bytes))
        }
        if !declarations.edits.isEmpty || !declarations.functions.isEmpty {
            forms.append(
                Form(
                    script: wrap(apply(declarations.edits), prelude: declarations.names, exports: declarations.functions, functionName: functionName), edits: declarations.edits,
                    input: scan.bytes))
        }
        forms.append(verbatim)
        return forms
    }

    // MARK: Statements

    /// Splits at top-level semicolons, after a top-level block followed by a statement on the
    /// same line (`function f() {} f()`), and at line breaks where JavaScript inserts a
    /// semicolon: the line before ends a value and the next one cannot continue it (it does not
    /// start with an operator, `(`, `[`, `.` or a template literal).
    static func split(_ scan: ReplScan) -> [Range<Int>] {
        var result: [Range<Int>] = []
        var start = 0
        let tokens = scan.tokens
        for (index, token) in tokens.enumerated() where token.depth == 0 {
            if scan.isPunctuator(token, ";") {
                if start < index { result.append(start..<(index + 1)) }
                start = index + 1
                continue
            }
            guard index + 1 < tokens.count, start <= index else { continue }
            let next = tokens[index + 1]
            if next.depth == 0, endsStatement(token, in: scan), startsStatement(next, after: token, in: scan) {
                result.append(start..<(index + 1))
                start = index + 1
            }
        }
        if start < tokens.count { result.append(start..<tokens.count) }
        return result
    }

    /// Words that continue the statement before them.
    static let continuingWords: Set<String> = ["in", "instanceof", "of", "else", "catch", "finally"]

    /// `token` can end a statement: a value, a postfix `++` or `--`, a closing bracket.
    private static func endsStatement(_ token: ReplScan.Token, in scan: ReplScan) -> Bool {
        switch token.kind {
        case .number, .string, .template, .regex: return true
        case .word:
            return !["typeof", "instanceof", "in", "of", "new", "delete", "void", "await", "yield", "case", "extends", "async", "else", "do"].contains(scan.text(token))
        case .punctuator:
            return [")", "]", "}", "++", "--"].contains(scan.text(token))
        }
    }

    /// Whether `next` starts a statement of its own after `previous`, a token that can end one:
    /// on a new line when it cannot continue an expression; on the same line only a word after
    /// a block's `}`.
    private static func startsStatement(_ next: ReplScan.Token, after previous: ReplScan.Token, in scan: ReplScan) -> Bool {
        guard next.newlineBefore else {
            return scan.isPunctuator(previous, "}") && next.kind == .word && !continuingWords.contains(scan.text(next))
        }
        switch next.kind {
        case .number, .string, .regex: return true
        case .template: return false
        case .word: return !continuingWords.contains(scan.text(next))
        case .punctuator: return ["{", "!", "~", "++", "--"].contains(scan.text(next))
        }
    }

    // MARK: Rewriting

    /// One change to the input: `length` bytes at `offset` replaced by `text`.
    struct Edit {
        var offset: Int
        var length: Int
        var text: String
    }

    /// Top-level declarations made assignments of globals: `var a = 1, b` becomes
    /// `void (a = 1, b);` with `var a, b;` before the function (destructuring assigns its names
    /// the same way), `class C {}` becomes `C = class C {};`, and a function declaration stays
    /// and is assigned to its global when the body starts.
    func hoisting() -> (edits: [Edit], names: [String], functions: [String]) {
        var edits: [Edit] = []
        var names: [String] = []
        var functions: [String] = []
        let tokens = scan.tokens
        for statement in statements {
            let first = tokens[statement.lowerBound]
            guard first.kind == .word, statement.count >= 2 else { continue }
            let second = tokens[statement.lowerBound + 1]
            let lastIndex = lastSignificant(statement)
            let last = tokens[lastIndex]
            switch scan.text(first) {
            case "var", "let", "const":
                guard second.kind == .word || scan.isPunctuator(second, "{") || scan.isPunctuator(second, "[") else { continue }
                names += declaredNames(statement)
                edits.append(Edit(offset: first.start, length: first.end - first.start, text: "void ("))
                edits.append(Edit(offset: last.end, length: 0, text: ");"))
            case "class":
                guard second.kind == .word else { continue }
                edits.append(Edit(offset: first.start, length: 0, text: "\(scan.text(second)) = "))
                edits.append(Edit(offset: last.end, length: 0, text: ";"))
            case "function", "async":
                var index = statement.lowerBound + (scan.text(first) == "async" ? 1 : 0)
                guard index < statement.upperBound, scan.isWord(tokens[index], "function"), !tokens[index].newlineBefore || index == statement.lowerBound else { continue }
                index += 1
                if index < statement.upperBound, scan.isPunctuator(tokens[index], "*") { index += 1 }
                if index < statement.upperBound, tokens[index].kind == .word { functions.append(scan.text(tokens[index])) }
            default: continue
            }
        }
        var seen = Set<String>()
        return (edits, names.filter { seen.insert($0).inserted }, functions)
    }

    /// The identifiers a `var`/`let`/`const` statement declares directly (`a` and `b` in
    /// `let a = 1, b`); names inside destructuring patterns are assigned without a declaration.
    private func declaredNames(_ statement: Range<Int>) -> [String] {
        let tokens = scan.tokens
        let depth = tokens[statement.lowerBound].depth
        var names: [String] = []
        var expectName = true
        for index in (statement.lowerBound + 1)..<statement.upperBound {
            let token = tokens[index]
            if expectName, token.depth == depth, token.kind == .word { names.append(scan.text(token)) }
            expectName = token.depth == depth && scan.isPunctuator(token, ",")
        }
        return names
    }

    /// The last statement as `return (...)`, when it is an expression statement.
    func returningLast() -> [Edit]? {
        guard let statement = statements.last else { return nil }
        let first = scan.tokens[statement.lowerBound]
        if first.kind == .word, Self.statementWords.contains(scan.text(first)) { return nil }
        // `async function f() {}` declares; `async () => 1` is a value.
        if scan.isWord(first, "async"), statement.count > 1, scan.isWord(scan.tokens[statement.lowerBound + 1], "function") { return nil }
        if scan.isPunctuator(first, ";") { return nil }
        let last = scan.tokens[lastSignificant(statement)]
        return [Edit(offset: first.start, length: 0, text: "return ("), Edit(offset: last.end, length: 0, text: "\n)")]
    }

    /// The statement's last token that is not its semicolon.
    private func lastSignificant(_ statement: Range<Int>) -> Int {
        let last = statement.upperBound - 1
        return last > statement.lowerBound && scan.isPunctuator(scan.tokens[last], ";") ? last - 1 : last
    }

    /// The input with `edits` made (they do not overlap).
    func apply(_ edits: [Edit]) -> String {
        var bytes = scan.bytes
        for edit in edits.sorted(by: { $0.offset > $1.offset }) {
            bytes.replaceSubrange(edit.offset..<(edit.offset + edit.length), with: Array(edit.text.utf8))
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The script around a body: the declared names first, then an async function that runs the
    /// body in a function of its own (whose `return` is the value) and shows what it returned.
    func wrap(_ body: String, prelude: [String], exports: [String], functionName: String) -> String {
        let declare = prelude.isEmpty ? "" : "var \(prelude.joined(separator: ", ")); "
        let export = exports.map { "globalThis.\($0) = \($0); " }.joined()
        return declare + "(function () { return async function \(functionName)() { return __repl_show(await (async function () { " + export
            + "\n" + body + "\n})()); }; function __repl_show(v) { "
            + "if (v === globalThis.progress) { var values = {}; Object.keys(v).forEach(function (k) { values[k] = v[k]; }); v = values; } "
            + "return (" + ConsoleFormat.javascript + ")([typeof v === \"string\" ? JSON.stringify(v) : v]); } })()"
    }
}
