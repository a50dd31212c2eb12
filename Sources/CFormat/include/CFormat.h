#ifndef CFORMAT_H
#define CFORMAT_H

#include <stddef.h>

/// `value` as C's printf("%.2f") into `buffer` (at most `size` bytes, the NUL included); returns
/// what snprintf returns. `macro` prints the progress values with it: from Swift, the variadic
/// printf family goes through withVaList, whose dynamic cast of each argument scans every
/// protocol conformance of the statically linked binary once (docs/performance.md).
int macroengine_format_fixed2(char *buffer, size_t size, double value);

#endif
