// libFuzzer's driver entry point (from the toolchain's libclang_rt.fuzzer), for a program that
// has its own main: `macro-fuzz` chooses the target, then hands over to libFuzzer. Only called in
// builds with -sanitize=fuzzer and -DFUZZING (make fuzz).
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));
