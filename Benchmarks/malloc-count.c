// The allocation counter of `macro-bench ladder` (make bench): preloaded (LD_PRELOAD), it counts
// every call of malloc, calloc, realloc, memalign, posix_memalign and aligned_alloc in the
// process, on every thread, and forwards it to glibc's own implementation (`__libc_*`, the
// functions glibc's `malloc` itself is), so nothing else changes: same arenas, same tcache.
// The Swift runtime allocates through these (swift_slowAlloc: malloc, or aligned_alloc past
// malloc's alignment), Foundation and swift-nio too; JavaScriptCore's own heap (bmalloc/libpas)
// does not, so what is counted is the C and Swift heap. `macro-bench` reads the count through
// `macro_bench_malloc_count`, found with dlsym; without the preload it shows no allocations.
#include <stddef.h>
#include <stdint.h>
#include <errno.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

static uint64_t count;

static inline void counted(void) { __atomic_fetch_add(&count, 1, __ATOMIC_RELAXED); }

uint64_t macro_bench_malloc_count(void) { return __atomic_load_n(&count, __ATOMIC_RELAXED); }

void *malloc(size_t size) { counted(); return __libc_malloc(size); }
void *calloc(size_t n, size_t size) { counted(); return __libc_calloc(n, size); }
void *realloc(void *pointer, size_t size) { counted(); return __libc_realloc(pointer, size); }
void *memalign(size_t alignment, size_t size) { counted(); return __libc_memalign(alignment, size); }
void *aligned_alloc(size_t alignment, size_t size) { counted(); return __libc_memalign(alignment, size); }
int posix_memalign(void **result, size_t alignment, size_t size) {
    if (alignment % sizeof(void *) != 0 || (alignment & (alignment - 1)) != 0) return EINVAL;
    counted();
    void *pointer = __libc_memalign(alignment, size);
    if (!pointer) return ENOMEM;
    *result = pointer;
    return 0;
}
