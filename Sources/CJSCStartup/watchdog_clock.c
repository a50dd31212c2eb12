// JavaScriptCore's watchdog reads the thread's CPU time, clock_gettime(CLOCK_THREAD_CPUTIME_ID),
// at every entry into JavaScript while a time limit is set: a real system call (the vDSO has no
// CPU-time clocks), one per macro call. On a thread that asks for it (macrod's engine, see
// MacroEngine.Configuration.watchdogCountsWallTime), that clock reads the monotonic clock instead
// (the vDSO: no system call): the watchdog's ticks then count wall time, which is what the
// engine's own deadlines count anyway (a tick only decides when the engine looks). Every other
// thread and clock is untouched: debug sessions keep counting running time only.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <time.h>

#include "CJSCStartup.h"

typedef int (*clock_gettime_fn)(clockid_t, struct timespec *);

static __thread bool monotonic_thread_cpu_clock = false;
static clock_gettime_fn real_clock_gettime = NULL;

void macroengine_thread_cpu_clock_is_monotonic(void) { monotonic_thread_cpu_clock = true; }

int clock_gettime(clockid_t clock, struct timespec *time) {
    clock_gettime_fn real = __atomic_load_n(&real_clock_gettime, __ATOMIC_RELAXED);
    if (real == NULL) {
        real = (clock_gettime_fn)dlsym(RTLD_NEXT, "clock_gettime");
        __atomic_store_n(&real_clock_gettime, real, __ATOMIC_RELAXED);
    }
    if (clock == CLOCK_THREAD_CPUTIME_ID && monotonic_thread_cpu_clock) clock = CLOCK_MONOTONIC;
    return real(clock, time);
}
