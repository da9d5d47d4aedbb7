/* features_extract.c: filling a feature cache (features.h, ac_features_extract). Resumable: keys
 * already in a shard of the directory are skipped, so a killed run loses at most the shard it was
 * filling; the directory is locked while a run writes it. Photos are decoded and resized on a second
 * thread (a small queue) while the encoder runs on the calling thread. One shard file is
 * features_shard.c's. */
#include "attncap/encoder.h"
#include "attncap/features.h"
#include "features_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/file.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attncap/image.h"
#include "pool.h"
#include "common_internal.h"
#include "alloc_internal.h"

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
    /* read as the captioner reads it (ac_encoder_min_photo): the same pixels in training and captioning */
    const int need = policy == AC_RESIZE_BILINEAR ? 0 : size;
    if (ac_image_load_min(w->path, need, need, &img, &err) || ac_resize_photo(&img, size, stride, policy, &p->plain, &err)) {
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
        ac_f32_to_f16_n(b->tmp, d, b->row);
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
