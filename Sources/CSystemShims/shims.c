#define _GNU_SOURCE
#include <sys/mman.h>
#include "CSystemShims.h"

int macroengine_memfd(const char *name) {
    return memfd_create(name, MFD_CLOEXEC);
}
