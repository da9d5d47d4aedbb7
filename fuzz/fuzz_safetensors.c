/* fuzz/fuzz_safetensors.c: libFuzzer target for the safetensors reader (header JSON, shapes, offsets,
 * metadata) and the float conversion of what it accepts. Also compiled into tests/test_fuzz_regress.c
 * (with AC_FUZZ_NO_MAIN) to replay the committed corpus and crash reproducers in the normal suite. */
#include "fuzz_main.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/safetensors.h"

static int fuzz_safetensors(const uint8_t *data, size_t size) {
    ac_st_file f;
    ac_err err;
    if (ac_st_read_mem(data, size, "fuzz.safetensors", &f, &err) != 0) {
        if (strchr(err.msg, '\n')) abort(); /* errors are one line */
        return 0;
    }
    volatile unsigned sum = 0;
    for (int i = 0; i < f.n_tensors; i++) {
        const ac_st_tensor *t = &f.tensors[i];
        if (ac_st_find(&f, t->name) == NULL) abort();
        const uint8_t *p = t->data;
        if (t->nbytes && (p < (const uint8_t *)f.buf || p + t->nbytes > (const uint8_t *)f.buf + f.buf_len)) abort();
        for (size_t k = 0; k < t->nbytes; k += 7) sum += p[k];
        if ((t->dtype == AC_ST_F32 || t->dtype == AC_ST_F16) && t->nbytes <= (1u << 20)) {
            size_t n = t->nbytes / (t->dtype == AC_ST_F32 ? 4 : 2);
            float *out = malloc(n * sizeof *out + 1);
            if (out && ac_st_to_f32(t, out, n, "fuzz", &err) != 0) abort();
            free(out);
        }
    }
    for (int i = 0; i < f.n_meta; i++)
        if (ac_st_meta(&f, f.meta_keys[i]) == NULL) abort();
    ac_st_free(&f);
    return 0;
}

AC_FUZZ_MAIN(fuzz_safetensors, "ATTNCAP_MAX_TENSOR_ELEMS", "16777216")
