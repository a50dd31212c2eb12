import CJavaScriptCore

/// The minimal server's progress model: the one channel the benchmark macro uses
/// (`progress.inner`, 0...10), behind a sealed `progress` object whose accessor is a pair of
/// native callbacks (JSObjectMakeFunctionWithCallback), as macrod's progress object is a pair of
/// native functions per channel. So one call of the macro makes two native calls, as in macrod.
enum MinimalProgress {
    // nonisolated(unsafe): the callbacks are C function pointers and capture nothing, so the
    // value lives here; only the minimal server's one thread reads or writes it.
    /// The channel's value.
    nonisolated(unsafe) static var inner: Double = 0
    /// Whether a call changed the value since the server last looked (it journals the change).
    nonisolated(unsafe) static var changed = false

    /// Defines the read-only global `progress` in `context`, with `inner` read and written by
    /// the native callbacks.
    static func install(in context: JSGlobalContextRef) throws {
        let getName = JSStringCreateWithUTF8CString("get inner")
        defer { JSStringRelease(getName) }
        let get = JSObjectMakeFunctionWithCallback(context, getName) { context, _, _, _, _, _ in
            JSValueMakeNumber(context, MinimalProgress.inner)
        }
        let setName = JSStringCreateWithUTF8CString("set inner")
        defer { JSStringRelease(setName) }
        let set = JSObjectMakeFunctionWithCallback(context, setName) { context, _, _, count, arguments, exception in
            // As macrod's accessor: a finite number, clamped to the channel's range; else a throw.
            guard count >= 1, let arguments, JSValueIsNumber(context, arguments[0]) else {
                exception?.pointee = MinimalProgress.error("progress.inner: expected a finite number", in: context)
                return JSValueMakeUndefined(context)
            }
            let number = JSValueToNumber(context, arguments[0], nil)
            guard number.isFinite else {
                exception?.pointee = MinimalProgress.error("progress.inner: expected a finite number", in: context)
                return JSValueMakeUndefined(context)
            }
            let clamped = min(10, max(0, number))
            if clamped != MinimalProgress.inner { MinimalProgress.changed = true }
            MinimalProgress.inner = clamped
            return JSValueMakeUndefined(context)
        }
        let factory = try evaluate(
            """
            (function (get, set) {
              const progress = {};
              Object.defineProperty(progress, "inner", { get, set, enumerable: true });
              return Object.seal(progress);
            })
            """, in: context)
        var exception: JSValueRef?
        let accessors: [JSValueRef?] = [get, set]
        let progress = JSObjectCallAsFunction(context, factory, nil, 2, accessors, &exception)
        guard exception == nil, let progress else { throw BenchError("minimal server: the progress object could not be made") }
        let name = JSStringCreateWithUTF8CString("progress")
        defer { JSStringRelease(name) }
        JSObjectSetProperty(
            context, JSContextGetGlobalObject(context), name, progress,
            JSPropertyAttributes(kJSPropertyAttributeReadOnly | kJSPropertyAttributeDontDelete), nil)
    }

    /// An Error object with `message`, for a callback to throw.
    static func error(_ message: StaticString, in context: JSContextRef?) -> JSValueRef? {
        let text = JSStringCreateWithUTF8CString(UnsafeRawPointer(message.utf8Start).assumingMemoryBound(to: CChar.self))
        defer { JSStringRelease(text) }
        let arguments: [JSValueRef?] = [JSValueMakeString(context, text)]
        return JSObjectMakeError(context, 1, arguments, nil)
    }

    /// Evaluates `source` (a function expression) in `context`; the function.
    static func evaluate(_ source: String, in context: JSGlobalContextRef) throws -> JSObjectRef {
        let script = JSStringCreateWithUTF8CString(source)
        defer { JSStringRelease(script) }
        var exception: JSValueRef?
        let value = JSEvaluateScript(context, script, nil, nil, 1, &exception)
        guard exception == nil, let value, JSValueIsObject(context, value), let object = JSValueToObject(context, value, nil),
            JSObjectIsFunction(context, object)
        else { throw BenchError("minimal server: the script is not a function expression") }
        return object
    }
}
