/// The REPL's view of JavaScript input: its tokens, as much as telling statements apart needs
/// (strings, template literals with their substitutions, comments and regular expression
/// literals are single tokens, so brackets and semicolons inside them do not count), how deep
/// in brackets each token is, and whether the input ends inside something left open.
///
/// It is not a parser: the engine is. ``ReplProgram`` uses the tokens to find where top-level
/// statements start and end, and every text it builds from them is checked by the engine before
/// anything runs.
package struct ReplScan {
    /// One token of the input.
    package struct Token: Equatable {
        /// What the token is.
        package enum Kind: Equatable {
            /// An identifier or a keyword (also `#private` names).
            case word
            /// A number literal.
            case number
            /// A string literal.
            case string
            /// A template literal, substitutions included.
            case template
            /// A regular expression literal.
            case regex
            /// A punctuator: one character, or `++` / `--`.
            case punctuator
        }

        /// What it is.
        package var kind: Kind
        /// Its first byte's offset in the input's UTF-8.
        package var start: Int
        /// The offset after its last byte.
        package var end: Int
        /// Brackets open around it; an opening bracket counts outside itself, a closing one too.
        package var depth: Int
        /// A line break (or a comment holding one) comes between it and the token before.
        package var newlineBefore: Bool
    }

    /// The input's UTF-8.
    package let bytes: [UInt8]
    /// Its tokens, comments left out.
    package private(set) var tokens: [Token] = []
    /// It ends inside brackets, a template literal or a block comment: more input may finish it.
    package private(set) var endsOpen = false
    /// The first closing bracket with no opening one before it (no more input can finish the
    /// input): the bracket and its line.
    package private(set) var unmatchedCloser: (bracket: Character, line: Int)?
    /// True when there is such a bracket.
    package var hasUnmatchedCloser: Bool { unmatchedCloser != nil }

    /// Scans `source`.
    package init(_ source: String) {
        bytes = Array(source.utf8)
        var scanner = Scanner(bytes: bytes)
        scanner.run()
        tokens = scanner.tokens
        endsOpen = scanner.depth > 0 || scanner.unterminated
        unmatchedCloser = scanner.unmatchedCloser.map { offset in
            (Character(UnicodeScalar(bytes[offset])), bytes[..<offset].reduce(1) { $0 + ($1 == UInt8(ascii: "\n") ? 1 : 0) })
        }
    }

    /// The token's text.
    package func text(_ token: Token) -> String {
        String(decoding: bytes[token.start..<token.end], as: UTF8.self)
    }

    /// True when `token` is the punctuator `text`.
    package func isPunctuator(_ token: Token, _ text: String) -> Bool {
        token.kind == .punctuator && self.text(token) == text
    }

    /// True when `token` is the word `text`.
    package func isWord(_ token: Token, _ text: String) -> Bool {
        token.kind == .word && self.text(token) == text
    }
}

/// The scanning itself, one pass over the bytes.
private struct Scanner {
    let bytes: [UInt8]
    var index = 0
    var depth = 0
    var tokens: [ReplScan.Token] = []
    var unterminated = false
    /// The offset of the first closing bracket without an opening one.
    var unmatchedCloser: Int?
    var newlinePending = false

    /// Words after which a `/` starts a regular expression rather than dividing.
    static let regexAfterWords: Set<String> = [
        "return", "typeof", "instanceof", "in", "of", "new", "delete", "void", "throw", "case", "do", "else", "yield", "await",
    ]

    mutating func run() {
        var level = 0
        while let token = next(depth: &level) {
            tokens.append(token)
        }
        depth = level
    }

    /// The next token at the top level, nil at the end.
    mutating func next(depth: inout Int) -> ReplScan.Token? {
        skipSpaceAndComments()
        guard index < bytes.count else { return nil }
        let start = index
        let newline = newlinePending
        newlinePending = false
        let byte = bytes[index]
        var kind = ReplScan.Token.Kind.punctuator
        var tokenDepth = depth
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "'"):
            kind = .string
            skipString(quote: byte)
        case UInt8(ascii: "`"):
            kind = .template
            skipTemplate()
        case UInt8(ascii: "0")...UInt8(ascii: "9"):
            kind = .number
            skipNumber()
        case UInt8(ascii: ".") where index + 1 < bytes.count && Self.isDigit(bytes[index + 1]):
            kind = .number
            skipNumber()
        case UInt8(ascii: "/") where regexMayStart():
            kind = .regex
            skipRegex()
        case UInt8(ascii: "("), UInt8(ascii: "["), UInt8(ascii: "{"):
            index += 1
            depth += 1
        case UInt8(ascii: ")"), UInt8(ascii: "]"), UInt8(ascii: "}"):
            index += 1
            if depth == 0 { unmatchedCloser = unmatchedCloser ?? start } else { depth -= 1 }
            tokenDepth = depth
        case UInt8(ascii: "+"), UInt8(ascii: "-"):
            index += (index + 1 < bytes.count && bytes[index + 1] == byte) ? 2 : 1
        default:
            if Self.isWordByte(byte) || byte == UInt8(ascii: "#") {
                kind = .word
                index += 1
                skipWord()
            } else {
                index += 1
            }
        }
        return ReplScan.Token(kind: kind, start: start, end: index, depth: tokenDepth, newlineBefore: newline)
    }

    static func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

    /// Letters, digits, `_`, `$`, a backslash (a `\u` escape) and any non-ASCII byte.
    static func isWordByte(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
            || isDigit(byte) || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "$") || byte == UInt8(ascii: "\\") || byte >= 0x80
    }

    mutating func skipWord() {
        while index < bytes.count, Self.isWordByte(bytes[index]) { index += 1 }
    }

    /// Digits, letters (`0x1F`, `1e3`, `10n`), `_` and dots (`1.5`).
    mutating func skipNumber() {
        while index < bytes.count, Self.isWordByte(bytes[index]) || bytes[index] == UInt8(ascii: ".") { index += 1 }
    }

    /// Whitespace, line breaks and comments; notes a line break for the next token.
    mutating func skipSpaceAndComments() {
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\r") {
                newlinePending = true
                index += 1
            } else if byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") || byte == 0x0B || byte == 0x0C {
                index += 1
            } else if byte == UInt8(ascii: "/"), index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "/") {
                while index < bytes.count, bytes[index] != UInt8(ascii: "\n") { index += 1 }
            } else if byte == UInt8(ascii: "/"), index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "*") {
                index += 2
                while index < bytes.count, !(bytes[index] == UInt8(ascii: "*") && index + 1 < bytes.count && bytes[index + 1] == UInt8(ascii: "/")) {
                    if bytes[index] == UInt8(ascii: "\n") { newlinePending = true }
                    index += 1
                }
                if index >= bytes.count { unterminated = true; return }
                index += 2
            } else {
                return
            }
        }
    }

    /// A quoted string; a line break or the end leaves it unterminated (an error, not more to come).
    mutating func skipString(quote: UInt8) {
        index += 1
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\\") { index += 2; continue }
            index += 1
            if byte == quote || byte == UInt8(ascii: "\n") { return }
        }
        index = bytes.count
    }

    /// A template literal; each `${...}` is scanned as code until its own closing brace. Line
    /// breaks inside it say nothing about the tokens around it.
    mutating func skipTemplate() {
        let newline = newlinePending
        let outerTokens = tokens.count
        defer {
            // The substitutions' tokens were kept only to tell a regular expression from a division.
            tokens.removeSubrange(outerTokens...)
            newlinePending = newline
        }
        index += 1
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\\") { index += 2; continue }
            if byte == UInt8(ascii: "`") { index += 1; return }
            guard byte == UInt8(ascii: "$"), index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "{") else {
                index += 1
                continue
            }
            index += 2
            var inner = 0
            while true {
                skipSpaceAndComments()
                guard index < bytes.count else { unterminated = true; return }
                if inner == 0, bytes[index] == UInt8(ascii: "}") {
                    index += 1
                    break
                }
                guard let token = next(depth: &inner) else { unterminated = true; return }
                tokens.append(token)
            }
        }
        index = bytes.count
        unterminated = true
    }

    /// A regular expression literal, with its classes (`[/]`) and flags.
    mutating func skipRegex() {
        index += 1
        var inClass = false
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\\") { index += 2; continue }
            if byte == UInt8(ascii: "\n") { return }
            index += 1
            if byte == UInt8(ascii: "[") {
                inClass = true
            } else if byte == UInt8(ascii: "]") {
                inClass = false
            } else if byte == UInt8(ascii: "/") && !inClass {
                while index < bytes.count, Self.isWordByte(bytes[index]) { index += 1 }
                return
            }
        }
        index = bytes.count
    }

    /// A `/` starts a regular expression where a value is expected: at the start, after an
    /// operator or an opening bracket, after `}` (a block's end), or after a keyword such as `return`.
    func regexMayStart() -> Bool {
        guard let previous = tokens.last else { return true }
        switch previous.kind {
        case .number, .string, .template, .regex: return false
        case .word:
            return Self.regexAfterWords.contains(String(decoding: bytes[previous.start..<previous.end], as: UTF8.self))
        case .punctuator:
            let byte = bytes[previous.start]
            if byte == UInt8(ascii: ")") || byte == UInt8(ascii: "]") { return false }
            // `x++ / 2` divides.
            return previous.end - previous.start == 1
        }
    }
}
