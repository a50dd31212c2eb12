#ifndef CSYSTEMSHIMS_H
#define CSYSTEMSHIMS_H

/* epoll(7), which Glibc's Swift module leaves out: the benchmark's minimal server
 * (Sources/macro-bench/MinimalServer) waits in epoll_wait. */
#include <sys/epoll.h>
#include <spawn.h>

/// An anonymous in-memory file (memfd_create(2) with MFD_CLOEXEC): macrod's engine restart hands
/// its state to the next process in one, so nothing is written to the socket directory.
/// Returns the descriptor, or -1 with errno set.
int macroengine_memfd(const char *name);

/// Gives the memory malloc holds free back to the system (malloc_trim(0)): after a collection
/// freed garbage that lived outside the JavaScript heap (ICU's, say), so the resident size says
/// what is still in use. Returns 1 when memory was released.
int macroengine_malloc_trim(void);

/// accept4(2) with SOCK_NONBLOCK | SOCK_CLOEXEC (Glibc's Swift module does not declare accept4):
/// the next pending connection of `listener`, non-blocking, or -1 with errno set (EAGAIN when
/// there is none).
int macroengine_accept_nonblocking(int listener);

/// posix_spawn's file actions that Glibc's Swift module leaves out (they need _GNU_SOURCE):
/// close every descriptor from `from` up in the child (posix_spawn_file_actions_addclosefrom_np),
/// and change the child's directory (posix_spawn_file_actions_addchdir_np). 0 or an errno.
int macroengine_spawn_closefrom(posix_spawn_file_actions_t *actions, int from);
int macroengine_spawn_chdir(posix_spawn_file_actions_t *actions, const char *path);

/// pidfd_open(2) (Glibc's Swift module does not declare it): a descriptor that becomes readable
/// when process `pid` ends, so the tests wait for a child's exit in poll(2) instead of polling
/// waitpid. Returns the descriptor (close-on-exec), or -1 with errno set.
int macroengine_pidfd_open(int pid);

#endif
