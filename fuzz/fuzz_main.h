/* fuzz/fuzz_main.h: the libFuzzer entry points of a harness, one line per harness:
 *     AC_FUZZ_MAIN(fuzz_NAME, "ATTNCAP_MAX_...", "value")   (or "", "": no limit to set)
 * The limit keeps each exec small. With AC_FUZZ_NO_MAIN (tests/test_fuzz_regress.c includes
 * several harnesses into one test binary) it expands to nothing. */
#ifndef ATTNCAP_FUZZ_MAIN_H
#define ATTNCAP_FUZZ_MAIN_H
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#ifdef AC_FUZZ_NO_MAIN
#define AC_FUZZ_MAIN(fn, limit_env, limit_value)
#else
#define AC_FUZZ_MAIN(fn, limit_env, limit_value)                                  \
    int LLVMFuzzerInitialize(int *argc, char ***argv) {                           \
        (void)argc, (void)argv;                                                   \
        if (*(limit_env)) setenv(limit_env, limit_value, 1);                      \
        return 0;                                                                 \
    }                                                                             \
    int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return fn(data, size); }
#endif
#endif
