import CJavaScriptCore

/// The Swift closure behind a JavaScript function made from Swift. Kept as the private data of a
/// JS object of the one shared native-function class, and released by that class's finalizer.
final class NativeFunctionBox {
    let name: String
    /// Replaced when the same global is registered again (the JS function object stays).
    var body: (NativeArguments) throws -> JSValue

    init(name: String, body: @escaping (NativeArguments) throws -> JSValue) {
        self.name = name
        self.body = body
    }
}

/// The arguments of one native call, read in place (no array is made unless asked for).
struct NativeArguments {
    /// The calling context.
    let context: JSContext
    /// How many arguments were passed.
    let count: Int
    private let pointer: UnsafePointer<JSValueRef?>?

    init(context: JSContext, count: Int, pointer: UnsafePointer<JSValueRef?>?) {
        self.context = context
        self.count = pointer == nil ? 0 : count
        self.pointer = pointer
    }

    /// Argument `index`, or nil past the last one.
    subscript(index: Int) -> JSValue? {
        guard index < count, let pointer else { return nil }
        return JSValue(pointer[index] ?? JSValueMakeUndefined(context.ref), in: context)
    }

    /// The first argument, if any.
    var first: JSValue? { self[0] }

    /// All arguments as an array.
    var values: [JSValue] { (0..<count).map { self[$0]! } }
}

/// The shared JSClass for every native function: `callAsFunction` finds the closure in the
/// object's private data; `finalize` releases it. One class for all, so a registration costs one
/// object and one box, never a class.
enum NativeFunctionClass {
    /// Created once per process; JSClassRef is immutable and may be used by any context group.
    static let shared: NativeFunctionClassRef = {
        var definition = kJSClassDefinitionEmpty
        definition.className = UnsafeRawPointer(("Function" as StaticString).utf8Start)
            .assumingMemoryBound(to: CChar.self)
        definition.callAsFunction = nativeCall
        definition.finalize = nativeFinalize
        return NativeFunctionClassRef(ref: JSClassCreate(&definition))
    }()
}

/// Box for the process-wide class reference.
struct NativeFunctionClassRef: @unchecked Sendable {
    // @unchecked: a JSClassRef is immutable after JSClassCreate and is never released here;
    // JavaScriptCore allows one class to be used from any context group.
    let ref: JSClassRef
}

private func nativeCall(
    _ ctx: JSContextRef?, _ function: JSObjectRef?, _ thisObject: JSObjectRef?,
    _ argumentCount: Int, _ arguments: UnsafePointer<JSValueRef?>?,
    _ exception: UnsafeMutablePointer<JSValueRef?>?
) -> JSValueRef? {
    guard let ctx, let function, let raw = JSObjectGetPrivate(function) else { return nil }
    let box = Unmanaged<NativeFunctionBox>.fromOpaque(raw).takeUnretainedValue()
    let context = JSContext(ctx)
    do {
        return try box.body(NativeArguments(context: context, count: argumentCount, pointer: arguments)).ref
    } catch let error as MacroError {
        exception?.pointee = context.makeError(error.errorName ?? "Error", message: error.message).ref
        return nil
    } catch {
        exception?.pointee = context.makeError("Error", message: "\(box.name): \(error)").ref
        return nil
    }
}

private func nativeFinalize(_ object: JSObjectRef?) {
    guard let object, let raw = JSObjectGetPrivate(object) else { return }
    Unmanaged<NativeFunctionBox>.fromOpaque(raw).release()
}
