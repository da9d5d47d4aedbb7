/* features_internal.h: one shard file of a feature cache (features.h), listed, opened, validated and
 * written by features_shard.c, for the cache's extraction (features_extract.c), loading (features.c)
 * and merging (features_merge.c). Private to src/data/features*.c. */
#ifndef ATTNCAP_FEATURES_INTERNAL_H
#define ATTNCAP_FEATURES_INTERNAL_H
#include <stdint.h>

#include "attncap/encoder.h"
#include "attncap/features.h"
#include "attncap/safetensors.h"

/* A cache directory's shard files. */
typedef struct ac_features_shards {
    char **names; /* sorted file names "shard-NNNNN.safetensors" */
    int n, next_index;
} ac_features_shards;
/* Lists dir's shards. Temp files of killed runs ("*.tmp.PID" whose process is gone) are removed. */
int ac_features_shards_list(const char *dir, ac_features_shards *l, ac_err *err);
void ac_features_shards_free(ac_features_shards *l);

/* What a shard holds, validated: keys, shape, identity, and the photos' own grids when it has them. */
typedef struct ac_features_shard_info {
    int n, grid_h, grid_w, dim;
    char **keys;
    ac_encoder_id identity;
    const char *identity_str;     /* points into the ac_st_file */
    const ac_st_tensor *features; /* data NULL after a header-only read */
    const ac_st_tensor *grids;    /* I32 [n, 2] (an encoder that keeps the aspect ratio), or NULL */
} ac_features_shard_info;

/* A shard opened (its header only, or whole) and parsed. The caller owns it: ac_features_shard_close. */
typedef struct ac_features_shard {
    char *path;
    ac_st_file file;
    ac_features_shard_info info;
} ac_features_shard;
int ac_features_shard_open(const char *dir, const char *name, int header_only, ac_features_shard *o, ac_err *err);
void ac_features_shard_close(ac_features_shard *o);
/* The photos' own grids, out [n][2] (h, w; read from the file after a header-only open): the shard's
 * "grids", each checked (1 x 1 up to L cells; one line naming the photo otherwise), or the whole grid
 * for every photo of a shard without them. */
int ac_features_shard_grids(const ac_features_shard *o, int *out, ac_err *err);

/* Writes a shard atomically: keys[0..n) with their rows (L * dim values each, F16 or F32, contiguous in
 * data), grids [n][2] or NULL (not stored), and the identity. */
int ac_features_shard_write(const char *path, char *const *keys, int n, const void *data, int f16, int64_t L,
                            int64_t dim, const int *grids, const char *identity, ac_err *err);

int ac_features_cmp_str(const void *a, const void *b); /* qsort / bsearch of char * */
#endif
