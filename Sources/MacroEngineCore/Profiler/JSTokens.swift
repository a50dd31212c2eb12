/// A JavaScript source cut into the tokens that matter for finding function definitions:
/// identifiers and keywords, punctuators (brackets, `=`, `=>`, `:`, `,`, `;`, `.`, `*`, ...) and
/// opaque literals (strings, numbers, template text, regular expressions), each with its
/// one-based line. Comments and whitespace are dropped.
///
/// It is a lexer, not a parser: enough of the grammar to never mistake the inside of a string,
/// comment, template or regular expression for code. A template's `${...}` substitutions are
/// code and are lexed as such. A `/` starts a regular expression where an expression may start
/// (after an operator, an opening bracket, `,`, `;`, or a keyword such as `return`), else it
/// divides.
struct JSTokens {
    /// What a token is.
    enum Kind: Equatable { case identifier, punctuator, literal }

    /// One token: its kind, its text (a string's contents as written, a number's digits; the
    /// text of templates and regular expressions is not kept) and its line.
    struct Token: Equatable {
        var kind: Kind
        var text: String
        var line: Int
    }

    /// The tokens, in source order.
    private(set) var tokens: [Token] = []
    /// For each opening `(`, `[`, `{` (and each closing one) the index of its partner, when the
    /// source balances it.
    private(set) var partner: [Int: Int] = [:]
    /// For each token, the index of the innermost `{` that contains it (nil at the top level).
    private(set) var enclosingBrace: [Int?] = []

    private let scalars: [Unicode.Scalar]
    private var position = 0
    private var line = 1

    /// Lexes `source`.
    init(_ source: String) {
        scalars = Array(source.unicodeScalars)
        lex()
        pair()
    }

    // MARK: Lexing

    private static let expressionKeywords: Set<String> = [
        "return", "typeof", "instanceof", "in", "of", "new", "delete", "void", "throw", "case", "do", "else", "yield", "await",
    ]

    private func peek(_ offset: Int = 0) -> Unicode.Scalar? {
        position + offset < scalars.count ? scalars[position + offset] : nil
    }

    private mutating func advance() {
        if scalars[position] == "\n" { line += 1 }
        position += 1
    }

    /// True when a `/` here starts a regular expression rather than a division.
    private var regexAllowed: Bool {
        guard let last = tokens.last else { return true }
        switch last.kind {
        case .literal: return false
        case .identifier: return Self.expressionKeywords.contains(last.text)
        case .punctuator: return ![")", "]", "}"].contains(last.text)
        }
    }

    private static func isIdentifierStart(_ c: Unicode.Scalar) -> Bool {
        c == "$" || c == "_" || c == "\\" || c.properties.isIDStart
    }

    private static func isIdentifierPart(_ c: Unicode.Scalar) -> Bool {
        c == "$" || c == "_" || c == "\\" || c == "\u{200C}" || c == "\u{200D}" || c.properties.isIDContinue
    }

    private mutating func lex() {
        // Open `{` of code (false) and of template substitutions (true), to know where a `}`
        // returns to template text.
        var braces: [Bool] = []
        while let c = peek() {
            let start = line
            if c == "\n" || c.properties.isWhitespace { advance(); continue }
            if c == "/", peek(1) == "/" {
                while let d = peek(), d != "\n", d != "\u{2028}", d != "\u{2029}" { advance() }
                continue
            }
            if c == "/", peek(1) == "*" {
                advance(); advance()
                while peek() != nil, !(peek() == "*" && peek(1) == "/") { advance() }
                if peek() != nil { advance(); advance() }
                continue
            }
            if c == "\"" || c == "'" {
                tokens.append(Token(kind: .literal, text: readString(quote: c), line: start))
                continue
            }
            if c == "`" {
                advance()
                if skipTemplateText() { braces.append(true) }
                tokens.append(Token(kind: .literal, text: "", line: start))
                continue
            }
            if c == "}", braces.last == true {
                // The end of a `${...}`: back to the template's text.
                braces.removeLast()
                advance()
                if skipTemplateText() { braces.append(true) }
                tokens.append(Token(kind: .literal, text: "", line: start))
                continue
            }
            if c == "/", regexAllowed {
                skipRegularExpression()
                tokens.append(Token(kind: .literal, text: "", line: start))
                continue
            }
            if Self.isIdentifierStart(c) {
                var text = ""
                while let d = peek(), Self.isIdentifierPart(d) {
                    text.unicodeScalars.append(d)
                    advance()
                }
                tokens.append(Token(kind: .identifier, text: text, line: start))
                continue
            }
            if c.properties.numericType != nil || (c == "." && peek(1).map { $0.properties.numericType != nil } == true) {
                var text = ""
                while let d = peek(), Self.isIdentifierPart(d) || d == "." {
                    text.unicodeScalars.append(d)
                    advance()
                }
                tokens.append(Token(kind: .literal, text: text, line: start))
                continue
            }
            if c == "=", peek(1) == ">" {
                advance(); advance()
                tokens.append(Token(kind: .punctuator, text: "=>", line: start))
                continue
            }
            if c == "{" { braces.append(false) } else if c == "}", !braces.isEmpty { braces.removeLast() }
            advance()
            tokens.append(Token(kind: .punctuator, text: String(c), line: start))
        }
    }

    /// Reads a string literal; answers its contents as written (escapes left as they are).
    private mutating func readString(quote: Unicode.Scalar) -> String {
        advance()
        var text = ""
        while let c = peek(), c != quote, c != "\n" {
            if c == "\\" {
                text.unicodeScalars.append(c)
                advance()
            }
            if let d = peek() {
                text.unicodeScalars.append(d)
                advance()
            }
        }
        if peek() == quote { advance() }
        return text
    }

    /// Skips template text up to its closing backtick (false) or a `${` (true).
    private mutating func skipTemplateText() -> Bool {
        while let c = peek() {
            if c == "\\" {
                advance()
                if peek() != nil { advance() }
                continue
            }
            if c == "`" { advance(); return false }
            if c == "$", peek(1) == "{" { advance(); advance(); return true }
            advance()
        }
        return false
    }

    private mutating func skipRegularExpression() {
        advance()
        var inClass = false
        while let c = peek(), c != "\n" {
            if c == "\\" {
                advance()
                if peek() != nil, peek() != "\n" { advance() }
                continue
            }
            if c == "[" { inClass = true } else if c == "]" { inClass = false } else if c == "/", !inClass { break }
            advance()
        }
        if peek() == "/" { advance() }
        while let c = peek(), Self.isIdentifierPart(c) { advance() }
    }

    // MARK: Brackets

    private mutating func pair() {
        var open: [Int] = []
        var braces: [Int] = []
        enclosingBrace.reserveCapacity(tokens.count)
        for (index, token) in tokens.enumerated() {
            enclosingBrace.append(braces.last)
            guard token.kind == .punctuator else { continue }
            switch token.text {
            case "(", "[", "{":
                open.append(index)
                if token.text == "{" { braces.append(index) }
            case ")", "]", "}":
                // An unbalanced source (it would not have loaded): pair what can be paired.
                guard let last = open.last, Self.closing(tokens[last].text) == token.text else { continue }
                open.removeLast()
                if token.text == "}" { braces.removeLast() }
                partner[last] = index
                partner[index] = last
            default: break
            }
        }
    }

    private static func closing(_ text: String) -> String {
        switch text {
        case "(": return ")"
        case "[": return "]"
        default: return "}"
        }
    }
}
