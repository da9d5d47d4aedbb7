/* fuzz/fuzz_features.c: libFuzzer target for the feature-cache reader: the input is written as the
 * only shard of a cache directory, which ac_features_load must load or refuse (shard metadata JSON,
 * key list vs tensor shape, encoder identity vs grid); a loaded cache must also map (ac_features_open
 * with no memory budget) to the same keys and rows. Also replayed by tests/test_fuzz_regress.c. */
#include "fuzz_main.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/features.h"

static char fuzz_features_dir[4096];

static int fuzz_features(const uint8_t *data, size_t size) {
    if (!fuzz_features_dir[0]) {
        snprintf(fuzz_features_dir, sizeof fuzz_features_dir, "%s/fuzz-features-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        if (!mkdtemp(fuzz_features_dir)) abort();
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/shard-00000.safetensors", fuzz_features_dir);
    FILE *f = fopen(path, "wb");
    if (!f) abort();
    fwrite(data, 1, size, f);
    fclose(f);
    ac_feature_cache fc;
    ac_err err;
    if (ac_features_load(fuzz_features_dir, &fc, &err) != 0) {
        if (strchr(err.msg, '\n')) abort();
        return 0;
    }
    size_t row = (size_t)fc.grid_h * fc.grid_w * fc.dim;
    volatile float sum = 0;
    for (int i = 0; i < fc.n; i++) {
        if (ac_features_find(&fc, fc.keys[i]) != i) abort(); /* sorted and unique */
        if (row) sum += fc.data[(size_t)i * row] + fc.data[(size_t)i * row + row - 1];
    }
    ac_feature_cache mapped;
    if (ac_features_open(fuzz_features_dir, 0, &mapped, &err) != 0 || mapped.n != fc.n) abort();
    float *scratch = malloc(row * sizeof(float) + 1);
    if (!scratch) abort();
    for (int i = 0; i < fc.n; i++) {
        if (strcmp(mapped.keys[i], fc.keys[i])) abort();
        const float *r = ac_features_row(&mapped, i, scratch);
        if (row && memcmp(r, fc.data + (size_t)i * row, row * sizeof(float))) abort();
    }
    free(scratch);
    ac_features_free(&mapped);
    ac_features_free(&fc);
    return 0;
}

AC_FUZZ_MAIN(fuzz_features, "ATTNCAP_MAX_TENSOR_ELEMS", "16777216")
