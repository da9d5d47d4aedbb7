/* features_shard.c: one shard file of a feature cache (features_internal.h): the directory's listing,
 * a shard's parsing and validation (keys, shape, encoder identity, the photos' own grids), and writing
 * one atomically. */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "features_internal.h"
#include "common_internal.h"
#include "alloc_internal.h"

int ac_features_cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }


void ac_features_shards_free(ac_features_shards *l) {
    for (int i = 0; i < l->n; i++) free(l->names[i]);
    free(l->names);
    memset(l, 0, sizeof *l);
}

int ac_features_shards_list(const char *dir, ac_features_shards *l, ac_err *err) {
    memset(l, 0, sizeof *l);
    DIR *d = opendir(dir);
    if (!d) return ac_errf(err, "%s: cannot open feature directory: %s", dir, ac_strerror(errno));
    struct dirent *e;
    int cap = 0;
    while ((e = readdir(d))) {
        int idx, len = 0, pid;
        if (sscanf(e->d_name, "shard-%5d.safetensors%n", &idx, &len) == 1 && len == 23 && e->d_name[len] == 0) {
            if (l->n == cap) {
                cap = cap ? 2 * cap : 64;
                char **nn = ac_realloc(l->names, (size_t)cap * sizeof *nn);
                if (!nn) goto oom;
                l->names = nn;
            }
            if (!(l->names[l->n] = ac_strdup(e->d_name))) goto oom;
            l->n++;
            if (idx + 1 > l->next_index) l->next_index = idx + 1;
        } else if (sscanf(e->d_name, "shard-%5d.safetensors.tmp.%d%n", &idx, &pid, &len) == 2 && e->d_name[len] == 0 &&
                   pid > 0 && kill(pid, 0) != 0 && errno == ESRCH) {
            char *p = ac_path_join(dir, e->d_name);
            if (p) unlink(p);
            free(p);
        }
    }
    closedir(d);
    if (l->n) qsort(l->names, (size_t)l->n, sizeof *l->names, ac_features_cmp_str);
    return 0;
oom:
    closedir(d);
    ac_features_shards_free(l);
    return ac_errf(err, "%s: out of memory", dir);
}


static void info_free(ac_features_shard_info *s) {
    for (int i = 0; i < s->n && s->keys; i++) free(s->keys[i]);
    free(s->keys);
    memset(s, 0, sizeof *s);
}

static int shard_parse(const char *path, const ac_st_file *f, ac_features_shard_info *s, ac_err *err) {
    memset(s, 0, sizeof *s);
    const ac_st_tensor *t = ac_st_find(f, "features");
    const char *imgs = ac_st_meta(f, "images"), *enc = ac_st_meta(f, "encoder");
    if (!t || !imgs || !enc) return ac_errf(err, "%s: not a feature shard (needs tensor \"features\" and metadata \"images\", \"encoder\")", path);
    if (t->ndim != 3 || (t->dtype != AC_ST_F32 && t->dtype != AC_ST_F16) || t->shape[0] > 100000000)
        return ac_errf(err, "%s: \"features\" must be F32 or F16 [n, L, dim]", path);
    s->features = t;
    s->identity_str = enc;
    const ac_st_tensor *g = ac_st_find(f, "grids");
    if (g && (g->dtype != AC_ST_I32 || g->ndim != 2 || g->shape[0] != t->shape[0] || g->shape[1] != 2))
        return ac_errf(err, "%s: \"grids\" must be I32 [%lld, 2] (each photo's own grid)", path, (long long)t->shape[0]);
    s->grids = g;
    ac_err why; /* the shape is what does not match, whatever the identity's own flaw */
    if (ac_encoder_id_parse(enc, path, &s->identity, &why)) goto bad_enc;
    s->grid_h = s->identity.grid_h, s->grid_w = s->identity.grid_w, s->dim = s->identity.dim;
    if (s->grid_h <= 0 || s->grid_w <= 0 || s->dim <= 0) goto bad_enc;
    if ((int64_t)s->grid_h * s->grid_w != t->shape[1] || s->dim != t->shape[2]) goto bad_enc;
    cJSON *arr = cJSON_Parse(imgs);
    if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) != t->shape[0]) {
        cJSON_Delete(arr);
        info_free(s);
        return ac_errf(err, "%s: metadata \"images\" is not a JSON array of %lld names", path, (long long)t->shape[0]);
    }
    s->keys = ac_calloc((size_t)t->shape[0] + 1, sizeof *s->keys);
    const cJSON *k;
    int i = 0;
    cJSON_ArrayForEach(k, arr) {
        if (!s->keys || !cJSON_IsString(k) || !(s->keys[i] = ac_strdup(k->valuestring))) {
            s->n = i;
            cJSON_Delete(arr);
            info_free(s);
            return ac_errf(err, "%s: metadata \"images\" holds a non-string", path);
        }
        s->n = ++i;
    }
    cJSON_Delete(arr);
    return 0;
bad_enc:
    info_free(s);
    return ac_errf(err, "%s: metadata \"encoder\" does not match the features' shape", path);
}


void ac_features_shard_close(ac_features_shard *o) {
    info_free(&o->info);
    ac_st_free(&o->file);
    free(o->path);
    o->path = NULL;
}

int ac_features_shard_open(const char *dir, const char *name, int header_only, ac_features_shard *o, ac_err *err) {
    memset(o, 0, sizeof *o);
    o->path = ac_path_join(dir, name);
    if (!o->path) return ac_errf(err, "%s: out of memory", dir);
    int rc = header_only ? ac_st_read_header(o->path, &o->file, err) : ac_st_read(o->path, &o->file, err);
    if (rc) {
        free(o->path);
        o->path = NULL;
        return -1;
    }
    if (shard_parse(o->path, &o->file, &o->info, err)) {
        ac_st_free(&o->file);
        free(o->path);
        o->path = NULL;
        return -1;
    }
    return 0;
}

int ac_features_shard_grids(const ac_features_shard *o, int *out, ac_err *err) {
    const ac_features_shard_info *s = &o->info;
    const ac_st_tensor *g = s->grids;
    for (int r = 0; !g && r < s->n; r++) out[2 * r] = s->grid_h, out[2 * r + 1] = s->grid_w;
    if (!g) return 0;
    const size_t nb = (size_t)s->n * 2 * sizeof(int32_t);
    int32_t *v = ac_malloc(nb + 1);
    if (!v) return ac_errf(err, "%s: out of memory", o->path);
    int ok = g->nbytes == nb;
    if (ok && g->data) {
        memcpy(v, g->data, nb);
    } else if (ok) { /* a header-only open: the grids alone, from the file */
        const int fd = open(o->path, O_RDONLY | O_CLOEXEC);
        ok = fd >= 0 && pread(fd, v, nb, (off_t)g->offset) == (ssize_t)nb;
        if (fd >= 0) close(fd);
        if (!ok) {
            free(v);
            return ac_errf(err, "%s: cannot read \"grids\": %s", o->path, ac_strerror(errno));
        }
    }
    const long L = (long)s->grid_h * s->grid_w;
    for (int r = 0; ok && r < s->n; r++) {
        const int32_t h = v[2 * r], w = v[2 * r + 1];
        if (h < 1 || w < 1 || (long)h * w > L) {
            ac_errf(err, "%s: photo '%.200s' has a grid of %dx%d cells, not 1 to %ld (the cache's %dx%d)", o->path,
                    s->keys[r], (int)h, (int)w, L, s->grid_h, s->grid_w);
            free(v);
            return -1;
        }
        out[2 * r] = h, out[2 * r + 1] = w;
    }
    free(v);
    return ok ? 0 : ac_errf(err, "%s: \"grids\" has the wrong size", o->path);
}

int ac_features_shard_write(const char *path, char *const *keys, int n, const void *data, int f16, int64_t L,
                            int64_t dim, const int *grids, const char *identity, ac_err *err) {
    cJSON *arr = cJSON_CreateStringArray((const char *const *)keys, n);
    char *imgs = arr ? cJSON_PrintUnformatted(arr) : NULL;
    cJSON_Delete(arr);
    int32_t *g = grids ? ac_malloc((size_t)n * 2 * sizeof *g + 1) : NULL;
    int rc = -1;
    if (!imgs || (grids && !g)) {
        ac_errf(err, "%s: out of memory", path);
    } else {
        for (int i = 0; g && i < 2 * n; i++) g[i] = grids[i];
        ac_st_writer w;
        ac_st_writer_init(&w);
        const int64_t shape[3] = {n, L, dim}, gshape[2] = {n, 2};
        if (!ac_st_writer_add(&w, "features", f16 ? AC_ST_F16 : AC_ST_F32, 3, shape, data, err) &&
            (!g || !ac_st_writer_add(&w, "grids", AC_ST_I32, 2, gshape, g, err)) &&
            !ac_st_writer_meta(&w, "images", imgs, err) && !ac_st_writer_meta(&w, "encoder", identity, err))
            rc = ac_st_write(&w, path, err);
        ac_st_writer_free(&w);
    }
    free(imgs);
    free(g);
    return rc;
}
