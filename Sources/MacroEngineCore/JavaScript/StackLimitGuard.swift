import CJavaScriptCore

/// JavaScriptCore keeps `Error.stackTraceLimit` for the whole context, and sets it from any
/// assignment (or `delete`) on `Error`, even one the hardened built-ins refuse. Unguarded, one
/// macro's `Error.stackTraceLimit = 0` left every later error of every macro without a stack or a
/// position. The refused assignment is reported (the lockdown's setter), and an error that comes
/// without a stack shows a `delete` happened; either way the limit is put back when the outermost
/// entry ends, so only the entry that tampered with it sees the change.
struct StackLimitGuard {
    /// The lockdown's function that assigns the frozen limit again.
    var restorer: JSObjectRef?
    /// The lockdown's function that hardens an engine global defined after it.
    var harden: JSObjectRef?
    /// The limit may have been changed in this entry.
    var touched = false
}

extension JSRuntime {
    /// Freezes the built-ins (``Lockdown``) and installs the guard of the stack-trace limit.
    func installLockdown() throws {
        let lockdown = try evaluateRaw(Lockdown.source, file: nil)
        let report = makeFunction(name: "__macroengine_touchedStackLimit") { [weak self, context] (_: [JSValue]) in
            self?.stackLimit.touched = true
            return context.undefined
        }
        guard let function = lockdown.objectRef else { throw MacroError(code: .threw, message: "the lockdown did not evaluate to a function") }
        let pair = try call(function, arguments: [report.ref], macro: nil)
        guard let pairRef = pair.objectRef, let restorerRef = JSValue(JSObjectGetPropertyAtIndex(context.ref, pairRef, 0, nil), in: context).objectRef,
            let hardenRef = JSValue(JSObjectGetPropertyAtIndex(context.ref, pairRef, 1, nil), in: context).objectRef
        else { throw MacroError(code: .threw, message: "the lockdown returned no restorer") }
        JSValueProtect(context.ref, restorerRef)
        JSValueProtect(context.ref, hardenRef)
        stackLimit.restorer = restorerRef
        stackLimit.harden = hardenRef
        // The engine's globals defined so far (the timers, sleep, console).
        for name in builtinGlobals.sorted() { hardenEngineGlobal(name, globalObject(name)) }
    }

    /// Hardens engine global `name` as the lockdown hardened the built-ins (nothing before it).
    func hardenEngineGlobal(_ name: String, _ value: JSValue) {
        guard let harden = stackLimit.harden else { return }
        var arguments = RootedValues(context.ref, capacity: 2)
        arguments.append(context.string(name).ref)
        arguments.append(value.ref)
        var exception: JSValueRef?
        _ = arguments.withArguments { JSObjectCallAsFunction(context.ref, harden, nil, $1, $0, &exception) }
    }

    private func globalObject(_ name: String) -> JSValue {
        JSValue(withJSString(name) { JSObjectGetProperty(context.ref, JSContextGetGlobalObject(context.ref), $0, nil) }!, in: context)
    }

    /// At the end of the outermost entry (still armed): puts the limit back if it may have
    /// changed. Not after a watchdog stop, nor at the start of the next entry (JavaScriptCore
    /// aborts when JavaScript is called while the VM still terminates the stopped one: measured
    /// by `StopLocationTests`): then at the end of the next entry that ran to its end. Done only
    /// once the restorer returned.
    func restoreStackLimitIfTouched() {
        guard stackLimit.touched, watchdog.fired == nil, let restorer = stackLimit.restorer else { return }
        var exception: JSValueRef?
        _ = JSObjectCallAsFunction(context.ref, restorer, nil, 0, nil, &exception)
        if exception == nil { stackLimit.touched = false }
    }

    /// An Error object without a stack: the limit was changed in a way the setter cannot see
    /// (a `delete`); put it back at the end of this entry.
    func noteMissingStack() {
        if stackLimit.restorer != nil { stackLimit.touched = true }
    }
}
