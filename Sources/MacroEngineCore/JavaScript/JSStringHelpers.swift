import CJavaScriptCore

extension String {
    /// Creates a Swift string from a JSC string. JavaScript strings are UTF-16 and may hold lone
    /// surrogates; those become U+FFFD instead of trapping.
    init(jsString: JSStringRef) {
        let length = JSStringGetLength(jsString)
        guard length > 0, let characters = JSStringGetCharactersPtr(jsString) else {
            self = ""
            return
        }
        self = String(decoding: UnsafeBufferPointer(start: characters, count: length), as: UTF16.self)
    }
}

/// Creates a retained JSC string from a Swift string (UTF-16, embedded NULs kept).
/// The caller owns the result and must `JSStringRelease` it.
func makeJSString(_ string: String) -> JSStringRef {
    var units = Array(string.utf16)
    if units.isEmpty { units = [0]; return JSStringCreateWithCharacters(units, 0)! }
    return units.withUnsafeBufferPointer { JSStringCreateWithCharacters($0.baseAddress, $0.count)! }
}

/// Runs `body` with a temporary JSC string for `string`.
func withJSString<R>(_ string: String, _ body: (JSStringRef) throws -> R) rethrows -> R {
    let ref = makeJSString(string)
    defer { JSStringRelease(ref) }
    return try body(ref)
}

/// A JSC string created once and kept for the life of the process: property names that never
/// change (`message`, `line`, `length`, ...) are not re-created on every call.
struct InternedJSString: @unchecked Sendable {
    // @unchecked: a JSStringRef is an immutable, thread-safe, reference-counted UTF-16 buffer
    // (OpaqueJSString); this box never releases it, so sharing the pointer is safe.
    let ref: JSStringRef
    init(_ string: String) { self.ref = makeJSString(string) }
}

/// Property names used on hot paths.
enum JSNames {
    static let message = InternedJSString("message")
    static let name = InternedJSString("name")
    static let line = InternedJSString("line")
    static let column = InternedJSString("column")
    static let sourceURL = InternedJSString("sourceURL")
    static let stack = InternedJSString("stack")
    static let length = InternedJSString("length")
    static let getTime = InternedJSString("getTime")
}
