// ThreadSanitizer's annotation interface (compiler-rt's tsan_interface.h). Swift's
// Synchronization.Mutex locks inside the prebuilt, uninstrumented runtime library, so TSan cannot
// see that a Mutex orders two accesses; `Mutex.locked` (MacroEngineCore) tells it, in builds made
// with -DTSAN (make sanitize). Nothing here is called in other builds.
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
