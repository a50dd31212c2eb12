/// Makes a JavaScriptCore `Error.stack` read as a user expects, given the sources the frames
/// point into (as they were evaluated, so in JavaScriptCore's own positions):
///
/// - a caller's frame points at the start of its call expression (`obj.method(1)` at `obj`,
///   `new Foo()` at `new`), not at the `(` where JavaScriptCore puts a call's position;
/// - the extra frame an `async` function shows when it resumes (the function again, at its own
///   header) is left out, so a chain of awaits lists each call once.
///
/// The innermost frame keeps JavaScriptCore's position: it is the error's own `file:line:column`
/// (for `throw new Error(...)`, the `(` after `Error`), which the debugger and the dashboard use too.
enum StackTidy {
    /// `stack` (JavaScriptCore's lines, `name@file:line:column`), tidied; `source(file)` gives
    /// the text evaluated for a file, nil for one it does not know (its frames stay as they are).
    static func tidy(_ stack: String, source: (String) -> String?) -> String {
        var frames = stack.split(separator: "\n", omittingEmptySubsequences: false).map { StackFrame(stackLine: $0) }
        // Each file's lines, split once however many frames point into it (a deep recursion
        // in a large file must not scan it once per frame).
        var lines: [String: [Substring]] = [:]
        func lineText(_ file: String, _ number: Int) -> Substring? {
            if lines[file] == nil { lines[file] = source(file).map { $0.split(separator: "\n", omittingEmptySubsequences: false) } ?? [] }
            guard let all = lines[file], number >= 1, number <= all.count else { return nil }
            return all[number - 1]
        }
        var index = 1
        while index < frames.count {
            let frame = frames[index]
            guard let file = frame.file, let line = frame.line, let column = frame.column, let lineText = lineText(file, line) else {
                index += 1
                continue
            }
            if !frame.function.isEmpty, frame.function == frames[index - 1].function, isHeader(of: frame.function, lineText, column: column) {
                frames.remove(at: index)
                continue
            }
            frames[index].column = callStart(in: lineText, column: column)
            index += 1
        }
        return frames.map(\.stackLine).joined(separator: "\n")
    }

    /// Whether `column` of `line` is on the header of an async function named `name`: up to
    /// just past its body's `{` (where JavaScriptCore puts the frame of the body it resumes).
    static func isHeader(of name: String, _ line: Substring, column: Int) -> Bool {
        let units = Array(line.utf16)
        guard let brace = units.firstIndex(of: ascii("{")), column <= brace + 2 else { return false }
        let header = String(decoding: units[..<brace], as: UTF16.self)
        return header.contains("async") && header.contains(name)
    }

    /// Words that end a callee when scanning back (`return f(x)` starts at `f`).
    private static let keywords: Set<String> = ["return", "typeof", "await", "void", "throw", "case", "in", "of", "yield", "delete", "new", "else", "do"]

    /// The column (from 1) where the call whose `(` is at `column` of `line` starts: back over
    /// the callee (names joined by `.`/`?.`, bracketed parts) and a `new` before it. A column
    /// that is not at a `(` stays.
    static func callStart(in line: Substring, column: Int) -> Int {
        let units = Array(line.utf16)
        let open = column - 1
        guard open >= 0, open < units.count, units[open] == ascii("(") else { return column }
        func isName(_ unit: UInt16) -> Bool {
            unit == 36 || unit == 95 || (48...57).contains(unit) || (65...90).contains(unit) || (97...122).contains(unit) || unit >= 128
        }
        func skipSpaces(_ at: Int) -> Int {
            var at = at
            while at >= 0, units[at] == 32 || units[at] == 9 { at -= 1 }
            return at
        }
        /// The index of the bracket that opens the one closing at `close`, or nil.
        func opening(_ close: Int) -> Int? {
            let opener = units[close] == ascii(")") ? ascii("(") : ascii("[")
            var depth = 0
            var scan = close
            while scan >= 0 {
                if units[scan] == units[close] { depth += 1 } else if units[scan] == opener { depth -= 1 }
                if depth == 0 { return scan }
                scan -= 1
            }
            return nil
        }
        var start = open
        var at = skipSpaces(open - 1)
        // Atoms (a name, or a bracketed part), back from the `(`: joined by `.`/`?.`, or a
        // bracketed part right after what it follows (`a[0]`, `f()()`).
        while at >= 0 {
            var wasBracket = false
            if isName(units[at]) {
                var first = at
                while first > 0, isName(units[first - 1]) { first -= 1 }
                if keywords.contains(String(decoding: units[first...at], as: UTF16.self)) { break }
                start = first
                at = first - 1
            } else if units[at] == ascii(")") || units[at] == ascii("]"), let found = opening(at) {
                start = found
                at = found - 1
                wasBracket = true
            } else {
                break
            }
            let before = skipSpaces(at)
            guard before >= 0 else { break }
            if units[before] == ascii(".") {
                at = skipSpaces(before >= 1 && units[before - 1] == ascii("?") ? before - 2 : before - 1)
            } else if wasBracket, isName(units[before]) || units[before] == ascii(")") || units[before] == ascii("]") {
                at = before
            } else {
                break
            }
        }
        // `new Foo(...)` starts at `new`.
        let keyword = skipSpaces(start - 1)
        if keyword >= 2, String(decoding: units[(keyword - 2)...keyword], as: UTF16.self) == "new", keyword < 3 || !isName(units[keyword - 3]) {
            start = keyword - 2
        }
        return start + 1
    }

    private static func ascii(_ character: Unicode.Scalar) -> UInt16 { UInt16(character.value) }
}
