#ifndef MACROENGINE_CJSCSTARTUP_H
#define MACROENGINE_CJSCSTARTUP_H

#include <stdbool.h>

/* True once the JavaScriptCore options are set (jsc_options_set_boolean). They are set by a
 * constructor, before main, before any thread or VM exists, and this function exists so the
 * engine references the object file and the linker keeps it. */
bool macroengine_jsc_options_applied(void);

#endif
