#ifndef MACROENGINE_CJSCSTARTUP_H
#define MACROENGINE_CJSCSTARTUP_H

#include <stdbool.h>

/* True once the JavaScriptCore options are set (jsc_options_set_boolean). They are set by a
 * constructor, before main, before any thread or VM exists, and this function exists so the
 * engine references the object file and the linker keeps it. */
bool macroengine_jsc_options_applied(void);

/* On the calling thread, clock_gettime(CLOCK_THREAD_CPUTIME_ID) reads the monotonic clock:
 * JavaScriptCore's watchdog reads it at every entry, and the CPU-time clock is a system call
 * where the monotonic one is not (watchdog_clock.c). */
void macroengine_thread_cpu_clock_is_monotonic(void);

#endif
