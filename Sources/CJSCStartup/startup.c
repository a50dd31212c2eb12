#include "CJSCStartup.h"
#include <stdlib.h>

/* From WebKitGTK's GLib API (jsc/JSCOptions.h); declared here so this target needs no glib
 * headers. gboolean is an int. Resolved from libjavascriptcoregtk when the executable links. */
extern int jsc_options_set_boolean(const char *option, int value);

static bool applied = false;

/* usePollingTraps: optimized code checks the watchdog at loop back-edges; without it a runaway
 * loop that has tiered up is never terminated on WebKitGTK 2.50 (see JSCOptions.swift).
 * Runs before main, single-threaded, before any VM exists. A JSC_usePollingTraps the user set in
 * the environment is kept (JavaScriptCore reads it itself).
 *
 * Not setenv: it moves `environ` to the heap, and a statically linked Swift runtime finds argv by
 * walking back from the original `environ`, so every release binary lost its arguments. */
/* useWasm off: macros get no WebAssembly. Its code runs where the watchdog never looks (a
 * `(loop (br 0))` holds the engine until the stall restart), its memory is outside the heap
 * that memory_limit_mb counts (Memory.grow), and a shared WebAssembly.Memory brings back the
 * SharedArrayBuffer JavaScriptCore leaves out, and with it a blocking Atomics.wait. Unlike the
 * polling traps, a JSC_useWasm in the environment does not turn it back on: it is a sandbox
 * boundary, not a tuning knob. */
__attribute__((constructor)) static void macroengine_apply_jsc_options(void) {
    bool traps = getenv("JSC_usePollingTraps") != NULL || jsc_options_set_boolean("usePollingTraps", 1) != 0;
    bool wasm = jsc_options_set_boolean("useWasm", 0) != 0;
    applied = traps && wasm;
}

bool macroengine_jsc_options_applied(void) { return applied; }
