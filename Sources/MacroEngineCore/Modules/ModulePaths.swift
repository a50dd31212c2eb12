import Foundation

/// How an import's specifier names a file: relative to the importing file (`./x.js`, `../lib/x.js`),
/// as editors, Node and `tsc` resolve it. Bare names and absolute paths are refused.
enum ModulePaths {
    /// The path `specifier` names from `file`, normalized (no `.` or `..` left); throws `.syntax`
    /// at the specifier's position when it is not a relative `.js` path.
    static func resolve(_ specifier: String, from file: String, line: Int, column: Int) throws -> String {
        guard specifier.hasPrefix("./") || specifier.hasPrefix("../") else {
            throw MacroError(
                code: .syntax,
                message: "cannot import '\(specifier)': modules are named by a path relative to the importing file, such as './lib/rings.js'",
                file: file, line: line, column: column)
        }
        guard specifier.hasSuffix(".js") else {
            throw MacroError(
                code: .syntax,
                message: "cannot import '\(specifier)': name the module's file with its .js extension, as in './lib/\((specifier as NSString).lastPathComponent).js'",
                file: file, line: line, column: column)
        }
        let directory = (file as NSString).deletingLastPathComponent
        return normalized(directory + "/" + specifier)
    }

    /// `path` with `.` and `..` components removed (symlinks are not followed).
    static func normalized(_ path: String) -> String {
        var parts: [Substring] = []
        for part in path.split(separator: "/", omittingEmptySubsequences: true) {
            if part == "." { continue }
            if part == ".." {
                if !parts.isEmpty { parts.removeLast() }
                continue
            }
            parts.append(part)
        }
        return (path.hasPrefix("/") ? "/" : "") + parts.joined(separator: "/")
    }

    /// `path` relative to `directory` (`lib/rings.js`), or `path` itself when it is outside.
    static func relative(_ path: String, to directory: String) -> String {
        let root = normalized(directory)
        return path.hasPrefix(root + "/") ? String(path.dropFirst(root.count + 1)) : path
    }
}
