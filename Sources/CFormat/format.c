#include <stdio.h>
#include "CFormat.h"

int macroengine_format_fixed2(char *buffer, size_t size, double value) {
    return snprintf(buffer, size, "%.2f", value);
}
