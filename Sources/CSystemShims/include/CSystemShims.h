#ifndef CSYSTEMSHIMS_H
#define CSYSTEMSHIMS_H

/// An anonymous in-memory file (memfd_create(2) with MFD_CLOEXEC): macrod's engine restart hands
/// its state to the next process in one, so nothing is written to the socket directory.
/// Returns the descriptor, or -1 with errno set.
int macroengine_memfd(const char *name);

#endif
