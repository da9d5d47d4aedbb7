/* features.c: the feature cache. A directory of shards "shard-NNNNN.safetensors", each written
 * atomically, with tensor "features" [n, L, dim] (and "grids" [n, 2] when the encoder keeps the aspect
 * ratio) and metadata "images" (JSON array of n keys) and "encoder" (JSON identity); one shard file is
 * features_shard.c's. Extraction is resumable: keys already in a shard are skipped, so a
 * killed run loses at most the shard it was filling. Photos are decoded and resized on a second
 * thread (a small queue) while the encoder runs on the calling thread. */
#include "attncap/encoder.h"
#include "attncap/features.h"
#include "features_internal.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attncap/safetensors.h"
#include "pool.h"
#include "common_internal.h"
#include "alloc_internal.h"

#ifdef __F16C__
#include <immintrin.h>
#endif

/* Half to float for a whole row: with F16C (every x86-64 since 2013) 8 at a time; both exact. */
static void f16_to_f32_row(const unsigned char *src, float *dst, size_t n) {
    size_t k = 0;
#ifdef __F16C__
    for (; k + 8 <= n; k += 8) _mm256_storeu_ps(dst + k, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(src + 2 * k))));
#endif
    for (; k < n; k++) {
        uint16_t h;
        memcpy(&h, src + 2 * k, 2);
        dst[k] = ac_f16_to_f32(h);
    }
}

const char *ac_features_key(const char *path) {
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* ---- extraction ---- */

typedef struct {
    const char *path, *key;
    int need_plain, need_flip, dup_of; /* dup_of: index of an earlier photo with the same key, or -1 */
} work_item;

typedef struct {
    ac_image plain, flipped;
    int failed;
    char msg[1024];
} prepared;

#define QUEUE 3
typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t changed;
    prepared slot[QUEUE];
    int head, count, stop;
    const work_item *work;
    int n_work, size, stride;
    ac_resize policy; /* what the identity the shards record says */
} pipeline;

static void prepare(const work_item *w, int size, int stride, ac_resize policy, prepared *p) {
    memset(p, 0, sizeof *p);
    ac_err err;
    ac_image img;
    if (!*w->key) {
        p->failed = 1;
        snprintf(p->msg, sizeof p->msg, "%s: not a file name", w->path);
        return;
    }
    if (w->dup_of >= 0) {
        p->failed = 1;
        snprintf(p->msg, sizeof p->msg, "%s: duplicate file name '%s' (cache keys are file names without directory)", w->path, w->key);
        return;
    }
    if (ac_image_load(w->path, &img, &err) || ac_resize_photo(&img, size, stride, policy, &p->plain, &err)) {
        if (img.px) ac_image_free(&img);
        p->failed = 1;
        memcpy(p->msg, err.msg, sizeof p->msg);
        return;
    }
    ac_image_free(&img);
    if (w->need_flip) {
        size_t nb = (size_t)p->plain.w * p->plain.h * 3;
        p->flipped.px = ac_malloc(nb);
        if (!p->flipped.px) {
            ac_image_free(&p->plain);
            p->failed = 1;
            snprintf(p->msg, sizeof p->msg, "%s: out of memory", w->path);
            return;
        }
        memcpy(p->flipped.px, p->plain.px, nb);
        p->flipped.w = p->plain.w, p->flipped.h = p->plain.h;
        ac_image_flip_h(&p->flipped);
    }
}

static void producer(pipeline *q) {
    for (int i = 0; i < q->n_work; i++) {
        prepared p;
        prepare(&q->work[i], q->size, q->stride, q->policy, &p);
        pthread_mutex_lock(&q->mu);
        while (q->count == QUEUE && !q->stop) pthread_cond_wait(&q->changed, &q->mu);
        if (q->stop) {
            pthread_mutex_unlock(&q->mu);
            ac_image_free(&p.plain);
            ac_image_free(&p.flipped);
            break;
        }
        q->slot[(q->head + q->count) % QUEUE] = p;
        q->count++;
        pthread_cond_broadcast(&q->changed);
        pthread_mutex_unlock(&q->mu);
    }
}

static void pipeline_pop(pipeline *q, prepared *out) {
    pthread_mutex_lock(&q->mu);
    while (q->count == 0) pthread_cond_wait(&q->changed, &q->mu);
    *out = q->slot[q->head];
    q->head = (q->head + 1) % QUEUE;
    q->count--;
    pthread_cond_broadcast(&q->changed);
    pthread_mutex_unlock(&q->mu);
}

/* The shard being filled. */
typedef struct {
    const ac_feature_source *src;
    const ac_features_opts *o;
    size_t row; /* floats per key: L * dim */
    int n, cap, next_index;
    char **keys;
    void *data; /* cap rows of F32 or F16 */
    int *grids; /* [cap][2] the photos' own grids, when the policy keeps the aspect ratio; else NULL */
    float *tmp;
} shard_buf;

static int shard_flush(shard_buf *b, ac_features_stats *st, ac_err *err) {
    if (!b->n) return 0;
    char name[64];
    snprintf(name, sizeof name, "shard-%05d.safetensors", b->next_index);
    char *path = ac_path_join(b->o->out_dir, name);
    int rc = path ? ac_features_shard_write(path, b->keys, b->n, b->data, b->o->fp16,
                                            (int64_t)b->src->grid_h * b->src->grid_w, b->src->dim, b->grids,
                                            b->src->identity_json, err)
                  : ac_errf(err, "%s: out of memory", b->o->out_dir);
    free(path);
    if (rc) return -1;
    for (int i = 0; i < b->n; i++) free(b->keys[i]);
    b->n = 0;
    b->next_index++;
    st->shards++;
    return 0;
}

/* Encodes one image into the shard under key (+ suffix), flushing the shard when full. */
static int shard_add(shard_buf *b, const ac_image *img, const char *key, const char *suffix, ac_features_stats *st,
                     ac_err *err) {
    int gh = b->src->grid_h, gw = b->src->grid_w;
    if (b->src->encode(b->src->ctx, img, b->tmp, &gh, &gw, err)) return -1;
    if (gh < 1 || gw < 1 || gh > b->src->grid_h || gw > b->src->grid_w || (!b->grids && (gh != b->src->grid_h || gw != b->src->grid_w)))
        return ac_errf(err, "the encoder gave a %dx%d grid for a %dx%d cache", gh, gw, b->src->grid_h, b->src->grid_w);
    size_t kl = strlen(key), sl = strlen(suffix);
    char *k = ac_malloc(kl + sl + 1);
    if (!k) return ac_errf(err, "out of memory");
    memcpy(k, key, kl);
    memcpy(k + kl, suffix, sl + 1);
    if (b->o->fp16) {
        uint16_t *d = (uint16_t *)b->data + (size_t)b->n * b->row;
        for (size_t i = 0; i < b->row; i++) d[i] = ac_f32_to_f16(b->tmp[i]);
    } else {
        memcpy((float *)b->data + (size_t)b->n * b->row, b->tmp, b->row * sizeof(float));
    }
    if (b->grids) b->grids[2 * b->n] = gh, b->grids[2 * b->n + 1] = gw;
    b->keys[b->n++] = k;
    st->encoded++;
    return b->n == b->cap ? shard_flush(b, st, err) : 0;
}

/* Existing keys (sorted) after checking every shard came from this encoder. */
static int existing_keys(const char *dir, const ac_encoder_id *ours, ac_features_shards *sl, char ***keys, int *nkeys, ac_err *err) {
    *keys = NULL, *nkeys = 0;
    int cap = 0;
    for (int i = 0; i < sl->n; i++) {
        ac_features_shard o;
        if (ac_features_shard_open(dir, sl->names[i], 1, &o, err)) return -1;
        ac_features_shard_info *s = &o.info;
        if (!ac_encoder_id_same(&s->identity, ours)) {
            char a[256], b[256];
            ac_encoder_id_describe(&s->identity, a, sizeof a);
            ac_encoder_id_describe(ours, b, sizeof b);
            ac_errc(err, AC_ERR_OTHER_ENCODER, "%s: made by a different encoder (%s; now %s)", o.path, a, b);
            ac_features_shard_close(&o);
            return -1;
        }
        if (*nkeys + s->n > cap) {
            cap = 2 * (*nkeys + s->n) + 16;
            char **nk = ac_realloc(*keys, (size_t)cap * sizeof *nk);
            if (!nk) {
                ac_features_shard_close(&o);
                return ac_errf(err, "%s: out of memory", dir);
            }
            *keys = nk;
        }
        for (int k = 0; k < s->n; k++) (*keys)[(*nkeys)++] = s->keys[k], s->keys[k] = NULL;
        ac_features_shard_close(&o);
    }
    if (*nkeys) qsort(*keys, (size_t)*nkeys, sizeof **keys, ac_features_cmp_str);
    return 0;
}

static int has_key(char **keys, int n, const char *key) {
    return n && bsearch(&key, keys, (size_t)n, sizeof *keys, ac_features_cmp_str) != NULL;
}

/* One extraction's two stages: task 1 decodes photos ahead (the producer, on a thread of its own);
 * task 0, on the caller's thread (callbacks come from there), encodes them in order into shards and
 * then tells task 1 to stop. */
typedef struct extract_run {
    pipeline *q;
    const work_item *work;
    int n_work;
    shard_buf *b;
    const ac_features_opts *o;
    ac_features_stats *st;
    ac_err *err;
    int fatal;
} extract_run;

static void extract_stage(void *arg, int task, int thread) {
    (void)thread;
    extract_run *r = arg;
    pipeline *q = r->q;
    if (task == 1) {
        producer(q);
        return;
    }
    const ac_features_opts *o = r->o;
    for (int i = 0; i < r->n_work && !r->fatal; i++) {
        prepared p;
        pipeline_pop(q, &p);
        if (p.failed) {
            r->st->failed++;
            if (o->on_error) o->on_error(o->user, p.msg);
        } else {
            const work_item *w = &r->work[i];
            if (w->need_plain && shard_add(r->b, &p.plain, w->key, "", r->st, r->err)) r->fatal = 1;
            if (!r->fatal && w->need_flip && shard_add(r->b, &p.flipped, w->key, "#flip", r->st, r->err)) r->fatal = 1;
            if (r->fatal) ac_err_prefix(r->err, "%s", w->path);
        }
        ac_image_free(&p.plain);
        ac_image_free(&p.flipped);
        if (o->on_progress) o->on_progress(o->user, i + 1, r->n_work);
    }
    pthread_mutex_lock(&q->mu);
    q->stop = 1;
    pthread_cond_broadcast(&q->changed);
    pthread_mutex_unlock(&q->mu);
}

typedef struct {
    const char *key;
    int idx;
} key_idx;
static int cmp_key_idx(const void *a, const void *b) {
    const key_idx *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    return c ? c : (x->idx > y->idx) - (x->idx < y->idx);
}

int ac_features_extract(const ac_feature_source *src, const char *const *paths, int n, const ac_features_opts *o,
                        ac_features_stats *st, ac_err *err) {
    memset(st, 0, sizeof *st);
    int shard_size = o->shard_size > 0 ? o->shard_size : 256;
    if (src->size <= 0 || src->grid_h <= 0 || src->grid_w <= 0 || src->dim <= 0)
        return ac_errf(err, "features: bad encoder shape");
    ac_encoder_id ours;
    if (ac_encoder_id_parse(src->identity_json, "features", &ours, err)) return -1;
    if (ac_mkdirs(o->out_dir, err)) return -1;
    /* One writer per cache: two runs would pick the same next shard number and overwrite each
     * other. flock is released by the kernel when a run dies, so a killed run leaves no stale lock. */
    char *lock_path = ac_path_join(o->out_dir, ".lock");
    int lock_fd = lock_path ? open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0666) : -1;
    free(lock_path);
    if (lock_fd < 0 || flock(lock_fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno, busy = lock_fd >= 0 && e == EWOULDBLOCK;
        if (lock_fd >= 0) close(lock_fd);
        return busy ? ac_errf(err, "%s: another attncap features run is writing to this directory", o->out_dir)
                    : ac_errf(err, "%s: cannot create a lock file: %s", o->out_dir, ac_strerror(e));
    }
    ac_features_shards sl;
    char **have = NULL;
    int n_have = 0, rc = -1;
    work_item *work = ac_calloc((size_t)n + 1, sizeof *work);
    key_idx *ki = ac_calloc((size_t)n + 1, sizeof *ki);
    shard_buf b = {src, o, (size_t)src->grid_h * src->grid_w * src->dim, 0, shard_size, 0, NULL, NULL, NULL, NULL};
    if (ac_features_shards_list(o->out_dir, &sl, err)) {
        free(work);
        free(ki);
        close(lock_fd);
        return -1;
    }
    if (existing_keys(o->out_dir, &ours, &sl, &have, &n_have, err)) goto done;
    if (!work || !ki) {
        ac_errf(err, "features: out of memory");
        goto done;
    }
    /* The work list: what each photo still needs; later photos with an earlier one's key fail. */
    for (int i = 0; i < n; i++) ki[i].key = ac_features_key(paths[i]), ki[i].idx = i;
    if (n) qsort(ki, (size_t)n, sizeof *ki, cmp_key_idx);
    int n_work = 0;
    for (int i = 0; i < n; i++) work[i].dup_of = -1;
    for (int i = 1; i < n; i++)
        if (!strcmp(ki[i].key, ki[i - 1].key))
            work[ki[i].idx].dup_of = work[ki[i - 1].idx].dup_of >= 0 ? work[ki[i - 1].idx].dup_of : ki[i - 1].idx;
    for (int i = 0; i < n; i++) {
        const char *key = ac_features_key(paths[i]);
        char fk[4096];
        snprintf(fk, sizeof fk, "%s#flip", key);
        work_item w = {paths[i], key, !has_key(have, n_have, key), o->flip && !has_key(have, n_have, fk), work[i].dup_of};
        if (!*key) w.dup_of = i; /* no file name: reported as an error below */
        if (!w.need_plain && !w.need_flip && w.dup_of < 0) {
            st->skipped++;
            continue;
        }
        work[n_work++] = w;
    }
    b.next_index = sl.next_index;
    b.keys = ac_calloc((size_t)shard_size, sizeof *b.keys);
    b.data = ac_malloc((size_t)shard_size * b.row * (o->fp16 ? 2 : 4));
    b.tmp = ac_malloc(b.row * sizeof *b.tmp);
    if (ours.policy == AC_RESIZE_ASPECT) b.grids = ac_malloc((size_t)shard_size * 2 * sizeof *b.grids);
    if (!b.keys || !b.data || !b.tmp || (ours.policy == AC_RESIZE_ASPECT && !b.grids)) {
        ac_errf(err, "features: out of memory for a shard of %d x %zu floats", shard_size, b.row);
        goto done;
    }
    pipeline q;
    memset(&q, 0, sizeof q);
    pthread_mutex_init(&q.mu, NULL);
    pthread_cond_init(&q.changed, NULL);
    q.work = work, q.n_work = n_work, q.size = src->size, q.policy = ours.policy;
    q.stride = src->size / src->grid_h; /* the aspect policy's (a square grid: ac_encoder_set_resize) */
    if (o->on_progress) o->on_progress(o->user, 0, n_work);
    extract_run run = {&q, work, n_work, &b, o, st, err, 0};
    if (ac_parallel_all(2, extract_stage, &run)) {
        pthread_mutex_destroy(&q.mu);
        pthread_cond_destroy(&q.changed);
        ac_errf(err, "features: cannot start the decoding thread");
        goto done;
    }
    int fatal = run.fatal;
    for (; q.count > 0; q.count--, q.head = (q.head + 1) % QUEUE) {
        ac_image_free(&q.slot[q.head].plain);
        ac_image_free(&q.slot[q.head].flipped);
    }
    pthread_mutex_destroy(&q.mu);
    pthread_cond_destroy(&q.changed);
    /* Keep what was encoded even after a fatal error. */
    ac_err ferr;
    if (shard_flush(&b, st, fatal ? &ferr : err)) fatal = fatal ? fatal : 1;
    rc = fatal ? -1 : 0;
done:
    for (int i = 0; i < b.n; i++) free(b.keys[i]);
    free(b.keys);
    free(b.data);
    free(b.tmp);
    free(b.grids);
    for (int i = 0; i < n_have; i++) free(have[i]);
    free(have);
    ac_features_shards_free(&sl);
    free(work);
    free(ki);
    close(lock_fd);
    return rc;
}

/* ---- loading ---- */

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
            else f16_to_f32_row(src, fc->data + (size_t)dest[g] * row, row);
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
    if (fc->half) f16_to_f32_row((const unsigned char *)(fc->half + (size_t)i * row), scratch, row);
    else if (fc->mapped_f16[i]) f16_to_f32_row(fc->mapped_row[i], scratch, row);
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
