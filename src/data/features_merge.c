/* features_merge.c: several feature caches (one per task of a sharded run) into one. The inputs are
 * mapped, never loaded whole; rows are copied as stored (F16 stays F16, bit for bit) in key order
 * into shards of shard_size, exactly as ac_features_extract writes them, so the merge of a sharded
 * run equals one extraction over the photos listed in sorted order. */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "attncap/encoder.h"

#include "attncap/features.h"
#include "attncap/safetensors.h"
#include "features_internal.h"
#include "common_internal.h"
#include "alloc_internal.h"

/* 1 if dir holds a shard file, 0 if none (an empty share), -1 if it cannot be read. */
static int has_shards(const char *dir, ac_err *err) {
    DIR *d = opendir(dir);
    if (!d) return ac_errf(err, "%s: cannot open feature directory: %s", dir, ac_strerror(errno));
    struct dirent *e;
    int found = 0;
    while (!found && (e = readdir(d))) {
        size_t l = strlen(e->d_name);
        found = !strncmp(e->d_name, "shard-", 6) && l > 12 && !strcmp(e->d_name + l - 12, ".safetensors");
    }
    closedir(d);
    return found;
}

/* A shared lock on dir/.lock, which ac_features_extract holds exclusively while it writes: a cache
 * still being filled is refused instead of merged half-done. Returns the descriptor to keep (-2 when
 * the cache has no lock file: nothing ever wrote to it through ac_features_extract), or -1. */
static int lock_input(const char *dir, ac_err *err) {
    char *p = ac_path_join(dir, ".lock");
    if (!p) return ac_errf(err, "%s: out of memory", dir);
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    free(p);
    if (fd < 0) return -2;
    if (flock(fd, LOCK_SH | LOCK_NB) != 0) {
        int e = errno;
        close(fd);
        return e == EWOULDBLOCK ? ac_errf(err, "%s: an attncap features run is still writing to it", dir)
                                : ac_errf(err, "%s: cannot lock: %s", dir, ac_strerror(e));
    }
    return fd;
}

typedef struct {
    const char *key;
    int cache, row;
} merge_entry;

static int cmp_entry(const void *a, const void *b) {
    const merge_entry *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    return c ? c : x->cache - y->cache;
}

/* Removes the temporary directory of a failed merge (only the files a merge writes). */
static void remove_tmp_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)))
        if (!strncmp(e->d_name, "shard-", 6)) {
            char *p = ac_path_join(dir, e->d_name);
            if (p) unlink(p);
            free(p);
        }
    closedir(d);
    rmdir(dir);
}

int ac_features_merge(const char *out_dir, const char *const *dirs, int n_dirs, int shard_size,
                      ac_features_merge_stats *st, ac_err *err) {
    memset(st, 0, sizeof *st);
    if (shard_size <= 0) shard_size = 256;
    if (n_dirs < 1) return ac_errf(err, "features merge: no input directories");
    if (ac_is_dir(out_dir)) {
        DIR *d = opendir(out_dir);
        struct dirent *e;
        int empty = d != NULL;
        while (d && empty && (e = readdir(d))) empty = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..");
        if (d) closedir(d);
        if (!empty) return ac_errf(err, "%s: exists and is not empty (merge into a new directory)", out_dir);
    } else if (ac_is_file(out_dir)) {
        return ac_errf(err, "%s: exists and is not a directory", out_dir);
    }
    ac_feature_cache *fc = ac_calloc((size_t)n_dirs, sizeof *fc);
    int *locks = ac_malloc((size_t)n_dirs * sizeof *locks);
    ac_encoder_id first_id;
    int first = -1, f16 = -1, rc = -1, n_entries = 0, f16_from = -1;
    merge_entry *ent = NULL;
    char *tmp = NULL;
    void *buf = NULL;
    char **keys = NULL;
    int *grids = NULL; /* a shard's photos' own grids, when the encoder keeps the aspect ratio */
    if (!fc || !locks) {
        free(fc), free(locks);
        return ac_errf(err, "features merge: out of memory");
    }
    for (int d = 0; d < n_dirs; d++) locks[d] = -2;
    for (int d = 0; d < n_dirs; d++) {
        int h = has_shards(dirs[d], err);
        if (h < 0) goto done;
        if ((locks[d] = lock_input(dirs[d], err)) == -1) goto done;
        if (!h) continue; /* an empty share */
        if (ac_features_open(dirs[d], 0, &fc[d], err)) goto done; /* mapped: nothing is loaded yet */
        ac_encoder_id id;
        if (ac_encoder_id_parse(fc[d].encoder_json, dirs[d], &id, err)) goto done;
        if (first < 0) {
            first = d, first_id = id;
        } else if (!ac_encoder_id_same(&id, &first_id)) {
            char a[256], b[256];
            ac_encoder_id_describe(&id, a, sizeof a);
            ac_encoder_id_describe(&first_id, b, sizeof b);
            ac_errf(err, "%s: made by a different encoder (%s) than %s (%s)", dirs[d], a, dirs[first], b);
            goto done;
        }
        for (int r = 0; r < fc[d].n; r++) {
            if (f16 < 0) f16 = fc[d].mapped_f16[r], f16_from = d;
            if (fc[d].mapped_f16[r] != f16) {
                ac_errf(err, "%s: '%s' is stored as %s, but %s holds %s (one stored as float16, one as float32)", dirs[d],
                        fc[d].keys[r], fc[d].mapped_f16[r] ? "F16" : "F32", dirs[f16_from], f16 ? "F16" : "F32");
                goto done;
            }
        }
        if (fc[d].n > INT_MAX - n_entries) {
            ac_errf(err, "%s: more than %d photos in all", dirs[d], INT_MAX);
            goto done;
        }
        n_entries += fc[d].n;
    }
    if (first < 0) {
        ac_errf(err, "%s: none of the %d directories holds feature shards", dirs[0], n_dirs);
        goto done;
    }
    ent = ac_malloc(((size_t)n_entries + 1) * sizeof *ent);
    if (!ent) goto oom;
    int k = 0;
    for (int d = 0; d < n_dirs; d++)
        for (int r = 0; r < fc[d].n; r++) ent[k].key = fc[d].keys[r], ent[k].cache = d, ent[k++].row = r;
    qsort(ent, (size_t)n_entries, sizeof *ent, cmp_entry);
    for (int i = 1; i < n_entries; i++)
        if (!strcmp(ent[i].key, ent[i - 1].key)) {
            ac_errf(err, "'%s' is in both %s and %s (overlapping shares?)", ent[i].key, dirs[ent[i - 1].cache],
                    dirs[ent[i].cache]);
            goto done;
        }
    if (f16 < 0) f16 = 0;
    const ac_feature_cache *c0 = &fc[first];
    const int64_t L = (int64_t)c0->grid_h * c0->grid_w;
    const size_t row_bytes = (size_t)L * c0->dim * (f16 ? 2 : 4);
    /* Written next to out_dir and renamed at the end: a killed merge leaves no half cache behind. */
    size_t tl = strlen(out_dir) + 32;
    tmp = ac_malloc(tl);
    buf = ac_malloc((size_t)shard_size * row_bytes + 1);
    keys = ac_malloc((size_t)shard_size * sizeof *keys);
    if (first_id.policy == AC_RESIZE_ASPECT) grids = ac_malloc((size_t)shard_size * 2 * sizeof *grids);
    if (!tmp || !buf || !keys || (first_id.policy == AC_RESIZE_ASPECT && !grids)) goto oom;
    char *trimmed = ac_strdup(out_dir);
    if (!trimmed) goto oom;
    for (size_t l = strlen(trimmed); l > 1 && trimmed[l - 1] == '/'; l--) trimmed[l - 1] = 0;
    snprintf(tmp, tl, "%s.tmp.%ld", trimmed, (long)getpid());
    free(trimmed);
    remove_tmp_dir(tmp); /* a leftover of an earlier merge that had our pid */
    if (ac_mkdirs(tmp, err)) goto done;
    for (int i = 0; i < n_entries; i += shard_size) {
        int n = n_entries - i < shard_size ? n_entries - i : shard_size;
        for (int j = 0; j < n; j++) {
            const merge_entry *e = &ent[i + j];
            memcpy((unsigned char *)buf + (size_t)j * row_bytes, fc[e->cache].mapped_row[e->row], row_bytes);
            keys[j] = (char *)e->key;
            if (grids) ac_features_grid(&fc[e->cache], e->row, &grids[2 * j], &grids[2 * j + 1]);
        }
        char name[64];
        snprintf(name, sizeof name, "shard-%05d.safetensors", st->shards);
        char *path = ac_path_join(tmp, name);
        const int wrc = path ? ac_features_shard_write(path, keys, n, buf, f16, L, c0->dim, grids, c0->encoder_json, err)
                             : ac_errf(err, "%s: out of memory", tmp);
        free(path);
        if (wrc) {
            remove_tmp_dir(tmp);
            goto done;
        }
        st->shards++;
        st->keys += n;
    }
    if (rename(tmp, out_dir) != 0) {
        int e = errno;
        remove_tmp_dir(tmp);
        ac_errf(err, "%s: cannot rename %s to it: %s", out_dir, tmp, ac_strerror(e));
        goto done;
    }
    for (int d = 0; d < n_dirs; d++) st->inputs += fc[d].n > 0;
    rc = 0;
    goto done;
oom:
    ac_errf(err, "features merge: out of memory");
done:
    for (int d = 0; d < n_dirs; d++) {
        ac_features_free(&fc[d]);
        if (locks[d] >= 0) close(locks[d]);
    }
    free(fc);
    free(locks);
    free(ent);
    free(tmp);
    free(buf);
    free(grids);
    free(keys);
    return rc;
}
