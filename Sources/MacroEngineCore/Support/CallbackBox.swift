/// A closure kept behind a reference, for storing in a `Mutex`: a function value read or written
/// through `Mutex.withLock`'s generic `inout` is re-abstracted on the way in and out, and a
/// `mutex.locked { $0 }?()` then wraps the stored closure in two more thunks at every read
/// (measured: a callback read at each entry into JavaScript made calls 3x slower within seconds,
/// 70% of the time in nested thunks). A class reference goes through unchanged.
package final class CallbackBox<Function: Sendable>: Sendable {
    /// The closure.
    package let call: Function

    /// Boxes `call`.
    package init(_ call: Function) { self.call = call }
}
