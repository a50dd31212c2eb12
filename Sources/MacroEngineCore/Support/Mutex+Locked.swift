import Synchronization

#if TSAN
import CThreadSanitizer
#endif

extension Mutex where Value: ~Copyable {
    /// `withLock`, made visible to ThreadSanitizer: the lock itself lives in the prebuilt
    /// Synchronization library, which TSan does not instrument, so without these annotations it
    /// reports every Mutex-protected access from two threads as a race. Builds without `-DTSAN`
    /// compile this to a plain `withLock`.
    @inlinable
    public borrowing func locked<Result: ~Copyable, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        #if TSAN
        // The Mutex's own address names the lock; no access to the value happens before the
        // acquire (taking the value's address would be one).
        let address = withUnsafePointer(to: self) { UnsafeMutableRawPointer(mutating: $0) }
        #endif
        return try withLock { (value: inout sending Value) throws(E) -> sending Result in
            #if TSAN
            __tsan_acquire(address)
            defer { __tsan_release(address) }
            #endif
            return try body(&value)
        }
    }
}
