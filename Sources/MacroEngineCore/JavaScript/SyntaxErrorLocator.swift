import CJavaScriptCore

/// JavaScriptCore's SyntaxError carries a line but no column. This finds the column: on the
/// error's line, the shortest prefix of the source that fails with the same message ends at the
/// offending token; the token quoted in the message (`Unexpected token ';'`) gives its start.
/// Costs about log2(line length) syntax checks, only when a file is broken.
enum SyntaxErrorLocator {
    static func column(in source: String, line: Int, message: String, check: (String) -> (line: Int?, message: String)?) -> Int? {
        let lines = source.split(separator: "\n", omittingEmptySubsequences: false)
        guard line >= 1, line <= lines.count else { return nil }
        let before = lines[..<(line - 1)].map { $0 + "\n" }.joined()
        let lineScalars = Array(lines[line - 1].unicodeScalars)
        func sameError(_ length: Int) -> Bool {
            var prefix = before
            prefix.unicodeScalars.append(contentsOf: lineScalars[..<length])
            guard let result = check(prefix) else { return false }
            return result.line == line && result.message == message
        }
        guard !lineScalars.isEmpty, sameError(lineScalars.count) else { return nil }
        var low = 0, high = lineScalars.count  // sameError(high) holds
        while low + 1 < high {
            let mid = (low + high) / 2
            if sameError(mid) { high = mid } else { low = mid }
        }
        let tokenLength = quotedToken(in: message).map { $0.unicodeScalars.count } ?? 1
        return max(1, high - tokenLength + 1)
    }

    /// The token JSC quotes in messages like `Unexpected token ';'` or `Unexpected identifier 'b'`.
    static func quotedToken(in message: String) -> String? {
        guard message.hasPrefix("Unexpected"), let open = message.firstIndex(of: "'") else { return nil }
        let rest = message[message.index(after: open)...]
        guard let close = rest.firstIndex(of: "'") else { return nil }
        let token = rest[..<close]
        return token.isEmpty ? nil : String(token)
    }
}
