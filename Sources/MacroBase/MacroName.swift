/// Rules for macro names: a JavaScript identifier (ASCII letters, digits, `_`, `$`; not starting
/// with a digit), not a reserved word, not an engine global.
public enum MacroName {
    /// JavaScript's reserved words and literals, which cannot name a function.
    static let reservedWords: Set<String> = [
        "break", "case", "catch", "class", "const", "continue", "debugger", "default", "delete", "do",
        "else", "enum", "export", "extends", "false", "finally", "for", "function", "if", "import", "in",
        "instanceof", "new", "null", "return", "super", "switch", "this", "throw", "true", "try", "typeof",
        "var", "void", "while", "with", "yield", "let", "static", "implements", "interface", "package",
        "private", "protected", "public", "await", "async", "arguments", "eval", "undefined", "NaN", "Infinity",
    ]

    /// Names every object answers to (Object.prototype's properties), and the engine's own
    /// prefix: a macro under such a name would shadow them (`__proto__` on the global object
    /// is its prototype).
    static let objectPropertyNames: Set<String> = [
        "__proto__", "constructor", "toString", "toLocaleString", "valueOf", "hasOwnProperty",
        "isPrototypeOf", "propertyIsEnumerable", "__defineGetter__", "__defineSetter__",
        "__lookupGetter__", "__lookupSetter__",
    ]

    /// Why `name` cannot name a macro although it is an identifier, if it cannot.
    public static func shadowingReason(_ name: String) -> String? {
        if objectPropertyNames.contains(name) { return "'\(name)' is a property of every JavaScript object (Object.prototype.\(name)); rename the file" }
        if name.hasPrefix("__macroengine") { return "'\(name)' is reserved for the engine's own functions (__macroengine...); rename the file" }
        return nil
    }

    /// True when `name` is a usable identifier (engine globals aside).
    public static func isIdentifier(_ name: String) -> Bool {
        // One pass over the UTF-8: every allowed character is ASCII, so any other byte (a
        // scalar past ASCII) fails, as its scalar would; at most 128 characters.
        var name = name
        let shape = name.withUTF8 { bytes -> Bool in
            guard let first = bytes.first, bytes.count <= 128, isStart(first) else { return false }
            return bytes.allSatisfy { isStart($0) || ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9")) }
        }
        return shape && !reservedWords.contains(name) && shadowingReason(name) == nil
    }

    /// A letter, `_` or `$` (what may start an identifier).
    private static func isStart(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
            || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "$")
    }
}
