#ifndef MACROENGINE_CJSCSTARTUP_H
#define MACROENGINE_CJSCSTARTUP_H

#include <stdbool.h>

/* True once the JavaScriptCore options were put in the environment. They are set by a
 * constructor, before main and before any thread exists (setenv is not thread-safe), and this
 * function exists so the engine references the object file and the linker keeps it. */
bool macroengine_jsc_options_applied(void);

#endif
