#include "CJSCStartup.h"
#include <stdlib.h>

static bool applied = false;

/* JSC_usePollingTraps: optimized code checks the watchdog at loop back-edges; without it a
 * runaway loop that has tiered up is never terminated on WebKitGTK 2.50 (see JSCOptions.swift).
 * A value the user already set is kept. Runs before main, single-threaded. */
__attribute__((constructor)) static void macroengine_apply_jsc_options(void) {
    setenv("JSC_usePollingTraps", "true", 0);
    applied = true;
}

bool macroengine_jsc_options_applied(void) { return applied; }
