import CJavaScriptCore
import NIOCore

/// A JavaScript function held from Swift. `Sendable`: calling it hops to the engine's thread.
/// The JS object is protected from garbage collection while this handle lives.
public final class MacroFunction: MacroCallable, Equatable {
    /// The engine the function belongs to.
    public let engine: MacroEngine
    /// The function's `name` property when it was converted.
    public let name: String
    private let handle: Handle

    /// The raw object pointer, dereferenced only on the engine's event loop.
    private struct Handle: @unchecked Sendable {
        // @unchecked: the pointer is only passed to JSC on the engine loop (every use goes through
        // the engine's `onLoop`); other threads just carry it around.
        let object: JSObjectRef
        let runtime: ObjectIdentifier
    }

    init(engine: MacroEngine, object: JSObjectRef, runtime: JSRuntime) {
        JSValueProtect(runtime.context.ref, object)
        self.engine = engine
        self.handle = Handle(object: object, runtime: ObjectIdentifier(runtime))
        let function = JSValue(object, in: runtime.context)
        self.name = function["displayName"].string ?? function["name"].string ?? ""
    }

    deinit {
        let handle = handle
        engine.onLoopEventually { runtime in
            guard ObjectIdentifier(runtime) == handle.runtime, !runtime.isClosed else { return }
            JSValueUnprotect(runtime.context.ref, handle.object)
        }
    }

    /// The object, when `runtime` is the one it belongs to.
    func objectRef(in runtime: JSRuntime) -> JSObjectRef? {
        ObjectIdentifier(runtime) == handle.runtime ? handle.object : nil
    }

    /// Calls the function with `this` undefined, under the engine's time limit (or `timeLimit`).
    /// Throws a ``MacroError`` when it throws or times out.
    @discardableResult
    public func call(_ arguments: [MacroValue], timeLimit: Duration? = nil) throws -> MacroValue {
        let handle = handle
        let name = name
        if !engine.eventLoop.inEventLoop {
            return try engine.callFuture(self, arguments: arguments, deadline: timeLimit).wait()
        }
        return try engine.sync { runtime in
            let args = try arguments.map { try runtime.jsValue($0).ref as JSValueRef? }
            return try self.engine.enter(runtime, .script(macro: name, timeLimit: timeLimit)) {
                try runtime.macroValue(try runtime.call(handle.object, arguments: args, macro: name))
            }
        }
    }

    /// Calls the function as an asynchronous macro call (see ``MacroEngine/callFuture(_:arguments:deadline:)``).
    public func callFuture(_ arguments: [MacroValue], deadline: Duration? = nil, callID: Int? = nil) -> EventLoopFuture<MacroValue> {
        engine.callFuture(self, arguments: arguments, deadline: deadline, callID: callID)
    }

    /// Calls the function with variadic arguments.
    @discardableResult
    public func call(_ arguments: MacroValue...) throws -> MacroValue { try call(arguments) }

    /// True when `other` is a handle of the same JS object (``MacroCallable``).
    public func isSame(as other: any MacroCallable) -> Bool {
        guard let other = other as? MacroFunction else { return false }
        return self == other
    }

    /// Two handles are equal when they hold the same JS object.
    public static func == (lhs: MacroFunction, rhs: MacroFunction) -> Bool {
        lhs.handle.object == rhs.handle.object && lhs.handle.runtime == rhs.handle.runtime
    }

    /// `function NAME`.
    public var description: String { "function \(name.isEmpty ? "<anonymous>" : name)" }
}
