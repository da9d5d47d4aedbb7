/* attncap/features.h: a feature cache of many photos' annotation vectors.
 * On disk: a directory of shards "shard-NNNNN.safetensors", each with tensor "features"
 * [n, grid_h*grid_w, dim] (F16 or F32) and metadata "images" (JSON array of keys, the photos'
 * file names without directory), "encoder" (JSON: file, sha256, layer, size, grid_h, grid_w, dim,
 * norm_mean, norm_scale, resize). Shards are written atomically, so an interrupted extraction loses
 * at most the shard in progress and a rerun skips the keys already present. */
#ifndef ATTNCAP_FEATURES_H
#define ATTNCAP_FEATURES_H
#include "attncap/common.h"

typedef struct ac_feature_cache {
    int n;              /* photos */
    char **keys;        /* n file names, sorted for lookup */
    int grid_h, grid_w, dim;
    float *data;        /* n * L * dim floats, row i belongs to keys[i] */
    char *encoder_json; /* the encoder identity as stored */
} ac_feature_cache;

int ac_features_load(const char *dir, ac_feature_cache *fc, ac_err *err);
int ac_features_find(const ac_feature_cache *fc, const char *key); /* index or -1 */
void ac_features_free(ac_feature_cache *fc);
#endif
