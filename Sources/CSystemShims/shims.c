#define _GNU_SOURCE
#include <malloc.h>
#include <sys/mman.h>
#include <sys/pidfd.h>
#include <sys/socket.h>
#include <spawn.h>
#include "CSystemShims.h"

int macroengine_memfd(const char *name) {
    return memfd_create(name, MFD_CLOEXEC);
}

int macroengine_malloc_trim(void) {
    return malloc_trim(0);
}

int macroengine_accept_nonblocking(int listener) {
    return accept4(listener, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
}

int macroengine_spawn_closefrom(posix_spawn_file_actions_t *actions, int from) {
    return posix_spawn_file_actions_addclosefrom_np(actions, from);
}

int macroengine_spawn_chdir(posix_spawn_file_actions_t *actions, const char *path) {
    return posix_spawn_file_actions_addchdir_np(actions, path);
}

int macroengine_pidfd_open(int pid) {
    return pidfd_open(pid, 0);
}
