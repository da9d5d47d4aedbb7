/* features.c: reading a feature cache (features.h). A directory of shards "shard-NNNNN.safetensors",
 * each written atomically (features_extract.c, features_merge.c), with tensor "features" [n, L, dim]
 * (and "grids" [n, 2] when the encoder keeps the aspect ratio) and metadata "images" (JSON array of n
 * keys) and "encoder" (JSON identity); one shard file is features_shard.c's. Rows are loaded as
 * float32, kept as float16 (compact) or mapped read-only, the same bits either way. */
#include "attncap/encoder.h"
#include "attncap/features.h"
#include "features_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attncap/safetensors.h"
#include "common_internal.h"
#include "alloc_internal.h"

const char *ac_features_key(const char *path) {
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

typedef struct {
    const char *key;
    int64_t global; /* row index across shards in file order */
} entry;
static int cmp_entry(const void *a, const void *b) {
    const entry *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    return c ? c : (x->global > y->global) - (x->global < y->global);
}

/* Maps the data of shard `o` (whose header says s->n rows) read-only into fc->maps[fc->n_maps++] and
 * points the wanted rows at it. */
static int shard_map(const ac_features_shard *o, const int64_t *dest, size_t row, ac_feature_cache *fc, ac_err *err) {
    const ac_st_tensor *t = o->info.features;
    int fd = open(o->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return ac_errf(err, "%s: %s", o->path, ac_strerror(errno));
    struct stat st;
    const size_t end = (size_t)t->offset + t->nbytes;
    if (fstat(fd, &st) || (uint64_t)st.st_size < end) {
        close(fd);
        return ac_errf(err, "%s: changed while being read", o->path);
    }
    if (!t->nbytes) { /* a shard of no rows: nothing to map */
        close(fd);
        return 0;
    }
    void *m = mmap(NULL, end, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED) return ac_errf(err, "%s: cannot map: %s", o->path, ac_strerror(errno));
    fc->maps[fc->n_maps] = m, fc->map_len[fc->n_maps++] = end;
    const int f16 = t->dtype == AC_ST_F16;
    const unsigned char *base = (const unsigned char *)m + t->offset;
    for (int r = 0; r < o->info.n; r++) {
        if (dest[r] < 0) continue;
        fc->mapped_row[dest[r]] = base + (size_t)r * row * (f16 ? 2 : 4);
        fc->mapped_f16[dest[r]] = (unsigned char)f16;
    }
    return 0;
}

/* want: NULL = every key; else only these (sorted here, in a copy of the pointers). compact: keep an
 * all-F16 cache as F16; map_over: map the rows instead of loading them when they would take more
 * than this many bytes (SIZE_MAX: never). */
static int features_load(const char *dir, int compact, size_t map_over, const char *const *want_keys, int n_want,
                         ac_feature_cache *fc, ac_err *err) {
    memset(fc, 0, sizeof *fc);
    if (!ac_is_dir(dir)) return ac_errc(err, AC_ERR_NOT_FEATURES, "%s: not a feature directory", dir);
    ac_features_shards sl;
    if (ac_features_shards_list(dir, &sl, err)) return -1;
    if (sl.n == 0) {
        ac_features_shards_free(&sl);
        return ac_errf(err, "%s: no feature shards (shard-NNNNN.safetensors) in it", dir);
    }
    /* Pass 1, headers only: keys, shapes, one encoder throughout. */
    char **keys = NULL;
    int64_t total = 0, cap = 0;
    int64_t *counts = ac_calloc((size_t)sl.n, sizeof *counts);
    ac_encoder_id first;
    int have_first = 0, any_grids = 0;
    int *grids = NULL; /* one shard's photos' own grids */
    entry *ent = NULL;
    int64_t *dest = NULL;
    const char **want = NULL;
    int rc = -1;
    if (!counts) goto oom;
    if (want_keys) {
        if (!(want = ac_malloc(((size_t)n_want + 1) * sizeof *want))) goto oom;
        memcpy(want, want_keys, (size_t)n_want * sizeof *want);
        qsort(want, (size_t)n_want, sizeof *want, ac_features_cmp_str);
    }
    for (int i = 0; i < sl.n; i++) {
        ac_features_shard o;
        if (ac_features_shard_open(dir, sl.names[i], 1, &o, err)) goto fail;
        ac_features_shard_info *s = &o.info;
        if (!have_first) {
            first = s->identity, have_first = 1;
            fc->grid_h = s->grid_h, fc->grid_w = s->grid_w, fc->dim = s->dim;
            fc->encoder_json = ac_strdup(s->identity_str);
        } else if (!ac_encoder_id_same(&s->identity, &first)) {
            ac_errf(err, "%s: made by a different encoder than %s/%s", o.path, dir, sl.names[0]);
            ac_features_shard_close(&o);
            goto fail;
        }
        if (total + s->n > cap) {
            cap = 2 * (total + s->n) + 64;
            char **nk = ac_realloc(keys, (size_t)cap * sizeof *nk);
            if (!nk) {
                ac_features_shard_close(&o);
                goto oom;
            }
            keys = nk;
        }
        for (int k = 0; k < s->n; k++) keys[total++] = s->keys[k], s->keys[k] = NULL;
        counts[i] = s->n;
        any_grids |= s->grids != NULL;
        if (s->features->dtype != AC_ST_F16) compact = 0; /* F32 rows stay exact */
        ac_features_shard_close(&o);
    }
    /* Sorted, first occurrence of a key wins (duplicates only arise from overlapping manual runs). */
    ent = ac_malloc((size_t)(total + 1) * sizeof *ent);
    dest = ac_malloc((size_t)(total + 1) * sizeof *dest);
    if (!ent || !dest || !fc->encoder_json) goto oom;
    for (int64_t i = 0; i < total; i++) ent[i].key = keys[i], ent[i].global = i, dest[i] = -1;
    if (total) qsort(ent, (size_t)total, sizeof *ent, cmp_entry);
    int64_t n = 0;
    for (int64_t i = 0; i < total; i++)
        if ((i == 0 || strcmp(ent[i].key, ent[i - 1].key)) &&
            (!want || bsearch(&ent[i].key, want, (size_t)n_want, sizeof *want, ac_features_cmp_str)))
            dest[ent[i].global] = n++;
    if (n > 0x7fffffff) {
        ac_errf(err, "%s: too many photos", dir);
        goto fail;
    }
    size_t row = (size_t)fc->grid_h * fc->grid_w * fc->dim;
    fc->keys = ac_calloc((size_t)n + 1, sizeof *fc->keys);
    const size_t elem = compact ? sizeof(uint16_t) : sizeof(float);
    const int map = row && ((uint64_t)n > SIZE_MAX / row / elem || (size_t)n * row * elem > map_over);
    if (map) {
        fc->mapped_row = ac_calloc((size_t)n + 1, sizeof *fc->mapped_row);
        fc->mapped_f16 = ac_calloc((size_t)n + 1, 1);
        fc->maps = ac_calloc((size_t)sl.n, sizeof *fc->maps);
        fc->map_len = ac_calloc((size_t)sl.n, sizeof *fc->map_len);
        if (!fc->keys || !fc->mapped_row || !fc->mapped_f16 || !fc->maps || !fc->map_len) goto oom;
    } else {
        void *rows = row && (uint64_t)n <= SIZE_MAX / row / elem ? ac_malloc((size_t)n * row * elem + 1) : NULL;
        if (compact) fc->half = rows;
        else fc->data = rows;
        if (!fc->keys || !rows) goto oom;
    }
    if (any_grids && !(fc->grids = ac_malloc((size_t)n * 2 * sizeof *fc->grids + 1))) goto oom;
    fc->n = (int)n;
    for (int64_t i = 0; i < total; i++)
        if (dest[i] >= 0) fc->keys[dest[i]] = keys[i], keys[i] = NULL;
    /* Pass 2: one shard in memory at a time, rows converted straight into their sorted place. */
    int64_t g = 0;
    for (int i = 0; i < sl.n; i++) {
        int64_t wanted = 0;
        for (int64_t r = 0; r < counts[i]; r++) wanted += dest[g + r] >= 0;
        if (!wanted) { /* a shard without wanted rows is not read */
            g += counts[i];
            continue;
        }
        ac_features_shard o;
        if (ac_features_shard_open(dir, sl.names[i], map, &o, err)) goto fail;
        const ac_features_shard_info *s = &o.info;
        if (s->n != counts[i] || (size_t)s->grid_h * s->grid_w * s->dim != row ||
            (compact && !map && s->features->dtype != AC_ST_F16)) {
            ac_errf(err, "%s: changed while being read", o.path);
            ac_features_shard_close(&o);
            goto fail;
        }
        if (fc->grids) { /* the wanted photos' own grids (a shard without them: whole grids) */
            int *ng = ac_realloc(grids, ((size_t)s->n * 2 + 1) * sizeof *ng);
            if (ng) grids = ng;
            if (!ng || ac_features_shard_grids(&o, grids, err)) {
                if (!ng) ac_errf(err, "%s: out of memory", o.path);
                ac_features_shard_close(&o);
                goto fail;
            }
            for (int r = 0; r < s->n; r++)
                if (dest[g + r] >= 0) memcpy(fc->grids + 2 * dest[g + r], grids + 2 * r, 2 * sizeof *grids);
        }
        if (map) {
            int mrc = shard_map(&o, dest + g, row, fc, err);
            ac_features_shard_close(&o);
            if (mrc) goto fail;
            g += counts[i];
            continue;
        }
        const ac_st_tensor *t = s->features;
        for (int r = 0; r < s->n; r++, g++) {
            if (dest[g] < 0) continue;
            const unsigned char *src = (const unsigned char *)t->data + (size_t)r * row * (t->dtype == AC_ST_F16 ? 2 : 4);
            if (compact) memcpy(fc->half + (size_t)dest[g] * row, src, row * sizeof(uint16_t));
            else if (t->dtype == AC_ST_F32) memcpy(fc->data + (size_t)dest[g] * row, src, row * sizeof(float));
            else ac_f16_to_f32_n(src, fc->data + (size_t)dest[g] * row, row);
        }
        ac_features_shard_close(&o);
    }
    rc = 0;
    goto fail;
oom:
    ac_errf(err, "%s: out of memory loading features", dir);
fail:
    for (int64_t i = 0; keys && i < total; i++) free(keys[i]);
    free(keys);
    free(counts);
    free(ent);
    free(dest);
    free(want);
    free(grids);
    ac_features_shards_free(&sl);
    if (rc) ac_features_free(fc);
    return rc;
}

int ac_features_load(const char *dir, ac_feature_cache *fc, ac_err *err) {
    return features_load(dir, 0, SIZE_MAX, NULL, 0, fc, err);
}

int ac_features_load_compact(const char *dir, ac_feature_cache *fc, ac_err *err) {
    return features_load(dir, 1, SIZE_MAX, NULL, 0, fc, err);
}

int ac_features_load_keys(const char *dir, const char *const *keys, int n_keys, ac_feature_cache *fc, ac_err *err) {
    return features_load(dir, 1, SIZE_MAX, keys, n_keys < 0 ? 0 : n_keys, fc, err);
}

int ac_features_open(const char *dir, size_t max_bytes, ac_feature_cache *fc, ac_err *err) {
    return features_load(dir, 1, max_bytes, NULL, 0, fc, err);
}

void ac_features_grid(const ac_feature_cache *fc, int i, int *grid_h, int *grid_w) {
    *grid_h = fc->grids ? fc->grids[2 * i] : fc->grid_h;
    *grid_w = fc->grids ? fc->grids[2 * i + 1] : fc->grid_w;
}

const float *ac_features_row(const ac_feature_cache *fc, int i, float *scratch) {
    const size_t row = (size_t)fc->grid_h * fc->grid_w * fc->dim;
    if (fc->data) return fc->data + (size_t)i * row;
    if (fc->half) ac_f16_to_f32_n(fc->half + (size_t)i * row, scratch, row);
    else if (fc->mapped_f16[i]) ac_f16_to_f32_n(fc->mapped_row[i], scratch, row);
    else memcpy(scratch, fc->mapped_row[i], row * sizeof(float));
    return scratch;
}

int ac_features_find(const ac_feature_cache *fc, const char *key) {
    int lo = 0, hi = fc->n - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2, c = strcmp(fc->keys[mid], key);
        if (!c) return mid;
        if (c < 0) lo = mid + 1;
        else hi = mid - 1;
    }
    return -1;
}

void ac_features_free(ac_feature_cache *fc) {
    if (!fc) return;
    for (int i = 0; fc->keys && i < fc->n; i++) free(fc->keys[i]);
    free(fc->keys);
    free(fc->data);
    free(fc->half);
    free(fc->encoder_json);
    free(fc->grids);
    for (int i = 0; i < fc->n_maps; i++) munmap(fc->maps[i], fc->map_len[i]);
    free(fc->maps), free(fc->map_len), free(fc->mapped_row), free(fc->mapped_f16);
    memset(fc, 0, sizeof *fc);
}
