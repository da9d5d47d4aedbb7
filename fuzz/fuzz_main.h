/* fuzz/fuzz_main.h: the libFuzzer entry points of a harness, one line per harness:
 *     AC_FUZZ_MAIN(fuzz_NAME, "ATTNCAP_MAX_...", "value")   (or "", "": no limit to set)
 * The limit keeps each exec small. With AC_FUZZ_NO_MAIN (tests/test_fuzz_regress.c includes
 * every harness into one test binary) it defines fuzz_NAME_limit (the env name and value) instead. */
#ifndef ATTNCAP_FUZZ_MAIN_H
#define ATTNCAP_FUZZ_MAIN_H
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#ifdef AC_FUZZ_NO_MAIN
/* the harness's limit as fn_limit[] = {env, value}, so that a replay sets the limit the fuzzer ran with */
#define AC_FUZZ_MAIN(fn, limit_env, limit_value) \
    __attribute__((unused)) static const char *const fn##_limit[2] = {limit_env, limit_value};
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
