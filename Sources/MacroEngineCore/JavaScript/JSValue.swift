import CJavaScriptCore

/// A JavaScript value, valid only on the engine's thread and only while JavaScriptCore can see it
/// (on the stack, or reachable from the global object). Not `Sendable`; convert it to a
/// ``MacroValue`` to keep it or hand it to another thread.
package struct JSValue {
    /// The underlying JSC value reference.
    package let ref: JSValueRef
    /// The context the value belongs to.
    package let context: JSContext

    /// Wraps a value reference of `context`.
    package init(_ ref: JSValueRef, in context: JSContext) {
        self.ref = ref
        self.context = context
    }

    /// True for `undefined`.
    package var isUndefined: Bool { JSValueIsUndefined(context.ref, ref) }
    /// True for `null`.
    package var isNull: Bool { JSValueIsNull(context.ref, ref) }
    /// True for a number primitive.
    package var isNumber: Bool { JSValueIsNumber(context.ref, ref) }
    /// True for a string primitive.
    package var isString: Bool { JSValueIsString(context.ref, ref) }
    /// True for a boolean primitive.
    package var isBoolean: Bool { JSValueIsBoolean(context.ref, ref) }
    /// True for any object, functions included.
    package var isObject: Bool { JSValueIsObject(context.ref, ref) }
    /// True when the value can be called.
    package var isFunction: Bool {
        guard let object = objectRef else { return false }
        return JSObjectIsFunction(context.ref, object)
    }

    /// The value as an object reference, or nil for primitives.
    package var objectRef: JSObjectRef? {
        guard JSValueIsObject(context.ref, ref) else { return nil }
        return JSValueToObject(context.ref, ref, nil)
    }

    /// The number, when the value is a number primitive.
    package var number: Double? { isNumber ? JSValueToNumber(context.ref, ref, nil) : nil }
    /// The string, when the value is a string primitive.
    package var string: String? { isString ? toString() : nil }
    /// The boolean, when the value is a boolean primitive.
    package var boolean: Bool? { isBoolean ? JSValueToBoolean(context.ref, ref) : nil }

    /// `String(value)` as JavaScript computes it; "<unprintable>" when that throws.
    package func toString() -> String {
        var exception: JSValueRef?
        guard let str = JSValueToStringCopy(context.ref, ref, &exception) else { return "<unprintable>" }
        defer { JSStringRelease(str) }
        return String(jsString: str)
    }

    /// A short description for error messages: `string "abc"`, `NaN`, `undefined`, `object`.
    package var typeDescription: String {
        switch JSValueGetType(context.ref, ref) {
        case kJSTypeUndefined: return "undefined"
        case kJSTypeNull: return "null"
        case kJSTypeBoolean: return "boolean \(toString())"
        case kJSTypeNumber: return toString() == "NaN" || toString().contains("Infinity") ? toString() : "number \(toString())"
        case kJSTypeString:
            let text = toString()
            return "string \"\(text.count > 40 ? String(text.prefix(40)) + "…" : text)\""
        case kJSTypeSymbol: return "symbol"
        default: return isFunction ? "function" : (isObject ? "object" : "value")
        }
    }

    /// Reads a property; `undefined` when it is missing or its getter throws.
    package subscript(property: String) -> JSValue {
        withJSString(property) { self[jsString: $0] }
    }

    subscript(jsString name: JSStringRef) -> JSValue {
        guard let object = objectRef else { return context.undefined }
        var exception: JSValueRef?
        let value = JSObjectGetProperty(context.ref, object, name, &exception)
        if exception != nil || value == nil { return context.undefined }
        return JSValue(value!, in: context)
    }
}
