/* attncap/features.h: not part of the stable API; may change in any release (the stable core: attncap.h). */
/* attncap/features.h: a feature cache of many photos' annotation vectors.
 * On disk: a directory of shards "shard-NNNNN.safetensors", each with tensor "features"
 * [n, grid_h*grid_w, dim] (F16 or F32) and metadata "images" (JSON array of keys, the photos'
 * file names without directory), "encoder" (JSON: file, sha256, layer, size, grid_h, grid_w, dim,
 * norm_mean, norm_scale, resize). A cache of an encoder that keeps the aspect ratio (encoder.h,
 * AC_RESIZE_ASPECT) also has tensor "grids" I32 [n, 2]: each photo's own grid h x w, its cells the
 * first h*w of the row, zero padding after (the others have none: every photo fills the grid). Shards are written atomically, so an interrupted extraction loses
 * at most the shard in progress and a rerun skips the keys already present. */
#ifndef ATTNCAP_FEATURES_H
#define ATTNCAP_FEATURES_H
#include "attncap/common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ac_feature_cache {
    int n;              /* photos */
    char **keys;        /* n file names, sorted for lookup */
    int grid_h, grid_w, dim;
    int *grids;         /* NULL: every photo fills grid_h x grid_w; else [n][2], each photo's own grid
                           (ac_features_grid) */
    float *data;        /* n * L * dim floats, row i belongs to keys[i]; NULL if `half` holds them */
    uint16_t *half;     /* the same as float16, when loaded compact from an all-F16 cache */
    char *encoder_json; /* the encoder identity as stored */
    /* Mapped (ac_features_open over its memory budget): row i is read from the shard files, mapped
     * read-only, at mapped_row[i] (float16 if mapped_f16[i], else float32). */
    const unsigned char **mapped_row;
    unsigned char *mapped_f16;
    void **maps;
    size_t *map_len;
    int n_maps;
} ac_feature_cache;

int ac_features_load(const char *dir, ac_feature_cache *fc, ac_err *err);
/* The same, except that a cache stored as F16 stays F16 in memory (half the memory of
 * ac_features_load; a 14x14x1280 Flickr8k cache with flips is 7 GB instead of 14). Rows converted
 * by ac_features_row are bit-identical to ac_features_load's. */
int ac_features_load_compact(const char *dir, ac_feature_cache *fc, ac_err *err);
/* ac_features_load_compact restricted to the given keys (any order; keys the cache lacks are simply
 * absent): shards holding none of them are not read, so scoring 1,000 dev photos from a 14,000-photo
 * cache reads a few shards, not all. */
int ac_features_load_keys(const char *dir, const char *const *keys, int n_keys, ac_feature_cache *fc, ac_err *err);
/* ac_features_load_compact when the rows fit in `max_bytes`; otherwise the rows are left in the shard
 * files and mapped read-only (mmap), so a cache larger than memory (COCO's 14x14 grid: 62 GB) can be
 * trained on: the OS keeps what fits in its page cache and reads the rest back as batches need it.
 * Rows are the same bits either way. A shard file truncated while mapped would fault (SIGBUS): the
 * cache must not be rewritten while a training run reads it. max_bytes 0 = always map. */
int ac_features_open(const char *dir, size_t max_bytes, ac_feature_cache *fc, ac_err *err);
/* Row i ([L, dim] float32): a pointer into fc->data, or `scratch` (L * dim floats) filled from the
 * float16 row of a compact cache or from a mapped shard. */
const float *ac_features_row(const ac_feature_cache *fc, int i, float *scratch);
int ac_features_find(const ac_feature_cache *fc, const char *key); /* index or -1 */
/* Row i's own grid: its cells are the first grid_h * grid_w of the row (the cache's whole grid unless
 * the photos kept their aspect ratio). Loading checked it: 1 x 1 up to the cache's L cells. */
void ac_features_grid(const ac_feature_cache *fc, int i, int *grid_h, int *grid_w);
void ac_features_free(ac_feature_cache *fc);

/* Extraction. The encoder is reached through this small interface (the CLI wraps ac_encoder; tests
 * use a fake), so the cache logic does not depend on the CNN. */
#include "attncap/image.h"
typedef struct ac_feature_source {
    void *ctx;
    /* img is already prepared (ac_resize_photo by identity_json's resize); out receives grid_h*grid_w*dim
     * floats, and *gh x *gw the photo's own grid (set to the whole grid on entry; smaller only when the
     * policy keeps the aspect ratio: its cells first, then zeros). */
    int (*encode)(void *ctx, const ac_image *img, float *out, int *gh, int *gw, ac_err *err);
    int size;                  /* photos are prepared at size as identity_json's resize says (encoder.h) */
    int grid_h, grid_w, dim;
    const char *identity_json; /* stored as the "encoder" metadata; must hold sha256, layer, size */
} ac_feature_source;

typedef struct ac_features_opts {
    const char *out_dir;
    int shard_size; /* keys per shard; 0 = 256 */
    int fp16;       /* store F16 (half the disk) instead of F32 */
    int flip;       /* also store the mirrored photo under "<name>#flip" */
    /* Called once per photo that fails (one line naming the file); extraction goes on. */
    void (*on_error)(void *user, const char *msg);
    /* Called with done = 0 once the work is known (total photos to encode), then after each photo
     * (NULL: none). The library prints nothing; the CLI draws its bar from these. */
    void (*on_progress)(void *user, int done, int total);
    void *user;
} ac_features_opts;

typedef struct ac_features_stats {
    int encoded; /* keys computed in this run */
    int skipped; /* photos whose keys were all in the cache already */
    int failed;  /* photos that could not be read (or duplicate names) */
    int shards;  /* shards written in this run */
} ac_features_stats;

/* Encodes paths[0..n) into out_dir (created if needed), skipping keys already cached there. Existing
 * shards must come from the same encoder (sha256, layer, size), else it refuses. Photos are decoded
 * on a second thread while the encoder runs. Returns 0 when it ran to the end (stats->failed may be
 * > 0), -1 on a fatal error (different encoder, unwritable directory, encoder error). */
int ac_features_extract(const ac_feature_source *src, const char *const *paths, int n, const ac_features_opts *o,
                        ac_features_stats *stats, ac_err *err);
/* Merging the caches of a sharded run (ac_shard, attncap features --shard I/N) into one. */
typedef struct ac_features_merge_stats {
    int inputs; /* directories that held rows (the others were empty shares) */
    int keys;   /* rows written */
    int shards; /* shard files written */
} ac_features_merge_stats;
/* Writes every row of the caches in dirs[0..n_dirs) into a new cache out_dir, in key order, shard_size
 * keys per shard (0 = 256), each row bit for bit as stored: the result is byte-identical to one
 * ac_features_extract over the same photos given in sorted order with the same shard size (without
 * --flip). A directory without shards is an empty share and adds nothing. Refuses an input that an
 * extraction is still writing (its lock is held), inputs made by a
 * different encoder (sha256, layer, size, grid, dim), F16 mixed with F32, a key in two inputs, and an
 * out_dir that exists and is not empty. The cache is written into "<out_dir>.tmp.PID" and renamed, so
 * out_dir appears complete or not at all. Inputs are mapped read-only, never held in memory whole. */
int ac_features_merge(const char *out_dir, const char *const *dirs, int n_dirs, int shard_size,
                      ac_features_merge_stats *stats, ac_err *err);
/* The cache key of a photo path: its file name without directory. */
const char *ac_features_key(const char *path);
#ifdef __cplusplus
}
#endif
#endif
