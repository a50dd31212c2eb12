import CJavaScriptCore

/// A JavaScriptCore execution context, valid only on the engine's thread.
///
/// `JSContext` and ``JSValue`` are deliberately not `Sendable`: the compiler keeps them on the
/// thread that runs the engine. Native functions receive them as arguments; use them to read
/// arguments and build results, and do not store them beyond the call.
package struct JSContext {
    /// The underlying JSC context reference.
    package let ref: JSContextRef

    /// Wraps a context reference handed out by JavaScriptCore.
    package init(_ ref: JSContextRef) { self.ref = ref }

    /// The global object of this context.
    package var globalObject: JSValue { JSValue(JSContextGetGlobalObject(ref), in: self) }

    /// `undefined`.
    package var undefined: JSValue { JSValue(JSValueMakeUndefined(ref), in: self) }
    /// `null`.
    package var null: JSValue { JSValue(JSValueMakeNull(ref), in: self) }

    /// A JavaScript number.
    package func number(_ value: Double) -> JSValue { JSValue(JSValueMakeNumber(ref, value), in: self) }
    /// A JavaScript boolean.
    package func boolean(_ value: Bool) -> JSValue { JSValue(JSValueMakeBoolean(ref, value), in: self) }
    /// A JavaScript string (any Unicode).
    package func string(_ value: String) -> JSValue {
        withJSString(value) { JSValue(JSValueMakeString(ref, $0), in: self) }
    }

    /// Parses JSON text into a JavaScript value, or returns nil when the text is not JSON.
    package func parseJSON(_ text: String) -> JSValue? {
        withJSString(text) { str in JSValueMakeFromJSONString(ref, str).map { JSValue($0, in: self) } }
    }

    /// Makes an instance of a global error constructor (`TypeError`, `RangeError`, ...).
    /// Falls back to a plain `Error` when the constructor is missing.
    package func makeError(_ constructorName: String, message: String) -> JSValue {
        let messageValue = string(message)
        if let constructor = globalObject[constructorName].objectRef, JSObjectIsConstructor(ref, constructor) {
            var exception: JSValueRef?
            var arguments: [JSValueRef?] = [messageValue.ref]
            if let error = JSObjectCallAsConstructor(ref, constructor, 1, &arguments, &exception), exception == nil {
                return JSValue(error, in: self)
            }
        }
        var arguments: [JSValueRef?] = [messageValue.ref]
        return JSValue(JSObjectMakeError(ref, 1, &arguments, nil), in: self)
    }
}
