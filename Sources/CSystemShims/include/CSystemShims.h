#ifndef CSYSTEMSHIMS_H
#define CSYSTEMSHIMS_H

/// An anonymous in-memory file (memfd_create(2) with MFD_CLOEXEC): macrod's engine restart hands
/// its state to the next process in one, so nothing is written to the socket directory.
/// Returns the descriptor, or -1 with errno set.
int macroengine_memfd(const char *name);

/// Gives the memory malloc holds free back to the system (malloc_trim(0)): after a collection
/// freed garbage that lived outside the JavaScript heap (ICU's, say), so the resident size says
/// what is still in use. Returns 1 when memory was released.
int macroengine_malloc_trim(void);

#endif
