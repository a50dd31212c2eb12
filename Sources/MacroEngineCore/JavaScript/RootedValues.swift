import CJavaScriptCore

/// JavaScript values made one at a time and handed to JavaScriptCore together (a call's
/// arguments, an array's elements), each protected from the collector while only this buffer
/// holds it.
///
/// JavaScriptCore's collector scans the thread's stack and registers, not Swift's heap: a value
/// whose only reference sits in a Swift array can be freed by the collection that making the next
/// value triggers, and the call then reads a dead cell (a general-protection fault in
/// `JSRopeString::resolveRope` was one such read). Every value goes through ``append(_:)``, so
/// none is ever held where the collector cannot see it.
struct RootedValues: ~Copyable {
    private let context: JSContextRef
    private let buffer: UnsafeMutableBufferPointer<JSValueRef?>
    /// How many values were appended.
    private(set) var count = 0

    /// Room for `capacity` values of `context`.
    init(_ context: JSContextRef, capacity: Int) {
        self.context = context
        buffer = .allocate(capacity: max(capacity, 1))
    }

    /// Keeps `value`, protected until this buffer ends.
    mutating func append(_ value: JSValueRef) {
        precondition(count < buffer.count, "RootedValues: more values than its capacity")
        JSValueProtect(context, value)
        buffer[count] = value
        count += 1
    }

    /// The values as the C API takes them: a pointer and a count.
    func withArguments<R>(_ body: (UnsafePointer<JSValueRef?>?, Int) throws -> R) rethrows -> R {
        try body(UnsafePointer(buffer.baseAddress), count)
    }

    deinit {
        for index in 0..<count { if let value = buffer[index] { JSValueUnprotect(context, value) } }
        buffer.deallocate()
    }
}
