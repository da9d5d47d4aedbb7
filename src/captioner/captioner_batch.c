/* captioner_batch.c: captioning many photo files, in lanes, results in input order (captioner.h).
 *
 * Each lane (a thread with its own CNN plan) takes the next photo, decodes, squashes and encodes it;
 * the encoded photos wait, and when SEARCH_BATCH of them are waiting (or no other photo can be taken)
 * the lane that sees it searches them all together (ac_captioner_search: the decoder's weights are
 * read once per step for the hypotheses of all of them) while the other lanes go on encoding. The
 * caller's thread hands the results out in input order. A photo is taken only when its ring slot has
 * been handed out, which bounds memory. With one lane the CNN gets all the threads and runs on the
 * caller's thread, while a second thread decodes the next photos ahead. Either way every caption is
 * ac_captioner_run's, bit for bit: a photo's search does not depend on the photos searched with it.
 * The photos come from a list, or from a source that hands them out as they arrive (a server's
 * requests): then the lanes stay open, and busy, for as long as the source lasts, and a lane with
 * nothing to take searches the photos waiting rather than hold them. */
#include "attncap/captioner.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "captioner_internal.h"
#include "pool.h"
#include "alloc_internal.h"

/* Photos searched together: 8 photos of beam 3 make 24 rows per step, past the 6 rows at which the
 * step's kernel stops being bound by reading the weights; more would only hold more photos in memory. */
enum { SEARCH_BATCH = 8 };

typedef struct job {
    ac_input in; /* where the photo comes from (the list's entry, or what the source handed out) */
    void *tag;   /* the source's, handed back with the result */
    ac_image photo, square;
    ac_image kept; /* the photo kept for the caller when it is read larger than the encoder's read (else photo) */
    ac_caption cap;
    float *ann, *probs; /* lanes: the encoded photo, waiting for its search (the slot's own buffers) */
    int grid[2];        /* its own grid */
    ac_region regions[AC_REGIONS_MAX]; /* lanes: its regions (a model with regions), appended to ann */
    int n_regions;
    int searched_with; /* photos in its search, itself included */
    enum { FREE, DECODED, ENCODED, DONE } state; /* FREE: or claimed; DECODED: one lane, waiting for the
                  CNN; ENCODED: lanes, waiting for its search */
    int ok;    /* 1 captioned, 0 failed (err) */
    int run_failed;
    double t_decode, t_cnn, t_bs;
    ac_err err;
} job;

typedef struct batch {
    ac_captioner *cap;
    const ac_input *in; /* the photos: files, encoded bytes, pixels (attncap.h); or */
    const ac_batch_source *src; /* the source that hands them out */
    int n, keep_photo;
    int max_search;  /* photos searched together at most (SEARCH_BATCH or the source's) */
    int ended;       /* no photo will come any more: the list taken, or the source ended */
    ac_captioner_lane *lanes; /* NULL: one lane, decoding only (single) */
    job *ring;
    int depth;
    int next_decode; /* next photo a lane (or the decoding thread) takes */
    int waiting[SEARCH_BATCH], n_waiting; /* encoded photos waiting for their search */
    int delivered;   /* results handed out: [0, delivered) */
    int single;
    int busy;  /* lanes decoding, encoding or searching */
    int whole; /* a lone photo is on the captioner's own CNNs, all threads: the other lanes take none */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    void (*on_result)(void *user, const ac_batch_result *r);
    void *user;
    double t_wait;
} batch;

/* An input's photo, read as ac_image_load_min reads a file (a file, encoded bytes, or pixels copied). */
static int load_input(const ac_input *in, int min_w, int min_h, ac_image *img, ac_err *err) {
    memset(img, 0, sizeof *img);
    if (in->path) return ac_image_load_min(in->path, min_w, min_h, img, err);
    if (in->data) {
        char name[64];
        snprintf(name, sizeof name, "photo of %zu bytes", in->size);
        return ac_image_load_mem_min(in->data, in->size, name, min_w, min_h, img, err);
    }
    if (!in->rgb) return ac_errf(err, "no photo given (path, data and rgb are all NULL)");
    const uint64_t max = ac_limits_get().max_image_pixels;
    if (in->width <= 0 || in->height <= 0) return ac_errf(err, "pixels: bad size %d x %d (width x height)", in->width, in->height);
    if ((uint64_t)in->width * (uint64_t)in->height > max)
        return ac_errf(err, "pixels: %d x %d is over the limit of %llu pixels (ATTNCAP_MAX_IMAGE_PIXELS)", in->width,
                       in->height, (unsigned long long)max);
    const size_t bytes = (size_t)in->width * (size_t)in->height * 3;
    if (!(img->px = ac_malloc(bytes))) return ac_errf(err, "out of memory");
    memcpy(img->px, in->rgb, bytes);
    img->w = in->width, img->h = in->height;
    return 0;
}

static void decode_job(batch *b, job *j) {
    double t0 = ac_now();
    int mw, mh; /* the encoder's need; the caption depends on this read alone, whatever is kept */
    ac_encoder_min_photo(&b->cap->enc, &mw, &mh);
    /* One photo with the detector beside the encoder: the squash waits for run_job, where the captioner
     * does it on one thread while the detector starts on the other (here nothing runs beside it). */
    const int squash_later = b->single && !b->src && b->n == 1 && b->cap->cnns_beside;
    j->ok = load_input(&j->in, mw, mh, &j->photo, &j->err) == 0 &&
            (squash_later || ac_captioner_prepare(b->cap, &j->photo, &j->square, &j->err) == 0);
    if (j->ok && b->keep_photo && mw > 0) { /* a kept photo (overlays) at least keep_min_side a side: read again
                                            * when the encoder's read is smaller (captioner.h) */
        const int k = b->cap->keep_min_side, kw = k > mw ? k : mw, kh = k > mh ? k : mh;
        if (k <= 0) j->ok = load_input(&j->in, 0, 0, &j->kept, &j->err) == 0;
        else if (j->photo.w < kw || j->photo.h < kh) j->ok = load_input(&j->in, kw, kh, &j->kept, &j->err) == 0;
    }
    if (!b->keep_photo && !b->cap->det) ac_image_free(&j->photo); /* the detector still needs it */
    j->t_decode = ac_now() - t0;
}

static void run_job(ac_captioner *cap, job *j) {
    if (!j->ok) return;
    if (ac_captioner_run_photo(cap, j->square.px ? &j->square : &j->photo, &j->photo, &j->cap, &j->t_cnn, &j->t_bs,
                               &j->err))
        j->ok = 0, j->run_failed = 1;
    ac_image_free(&j->square);
}

/* whole: no other lane is busy, so the photo takes the captioner's own CNNs and all its threads (the
 * detector beside the encoder, as ac_captioner_run; the same results); else the lane's one thread. */
static void encode_job(batch *b, ac_captioner_lane *lane, job *j, int whole) {
    if (!j->ok) return;
    double t0 = ac_now();
    ac_captioner *c = b->cap;
    if (ac_captioner_cnns(c, whole ? &c->enc : &lane->enc, whole ? c->det : lane->det, whole && c->cnns_beside,
                          &j->square, &j->photo, j->ann, j->probs, j->grid, j->regions, &j->n_regions, &j->err))
        j->ok = 0, j->run_failed = 1;
    ac_image_free(&j->square);
    if (!b->keep_photo) ac_image_free(&j->photo);
    j->t_cnn = ac_now() - t0;
}

/* The waiting photos' searches, together (called with the lock released). */
static void search_jobs(batch *b, const int *which, int n) {
    ac_name_task tasks[SEARCH_BATCH];
    double t0 = ac_now();
    for (int k = 0; k < n; k++) {
        const job *j = &b->ring[which[k] % b->depth];
        tasks[k] = (ac_name_task){.ann = j->ann, .probs = j->probs, .grid_h = j->grid[0], .grid_w = j->grid[1],
                                  .n_regions = j->n_regions, .regions = j->regions};
    }
    ac_captioner_search(b->cap, n, tasks, 1);
    const double each = (ac_now() - t0) / n;
    for (int k = 0; k < n; k++) {
        job *j = &b->ring[which[k] % b->depth];
        j->cap = tasks[k].out, j->t_bs = each, j->searched_with = n;
        if (!tasks[k].failed && ac_caption_set_regions(&j->cap, j->regions, j->n_regions))
            tasks[k].failed = ac_errf(&tasks[k].err, "out of memory");
        if (tasks[k].failed) j->ok = 0, j->run_failed = 1, j->err = tasks[k].err;
    }
}

/* Marks photos done and wakes the deliverer (lock held). */
static void mark_done(batch *b, const int *which, int n) {
    for (int k = 0; k < n; k++) b->ring[which[k] % b->depth].state = DONE;
    pthread_cond_broadcast(&b->cv);
}

/* With the lock held: the next photo into its ring slot, its index in *i. 1: taken; 0: none can be
 * taken now (its slot is not handed out yet, or the source has none waiting); -1: none will come. */
static int take(batch *b, int *i) {
    if (b->ended) return -1;
    if (b->next_decode >= b->delivered + b->depth) return 0;
    ac_input in = {0};
    void *tag = NULL;
    const int got = b->src ? b->src->next(b->src->user, &in, &tag) : b->next_decode < b->n ? (in = b->in[b->next_decode], 1) : -1;
    if (got < 0) {
        b->ended = 1;
        pthread_cond_broadcast(&b->cv); /* the deliverer may be waiting for a photo that will not come */
        return -1;
    }
    if (!got) return 0;
    job *j = &b->ring[b->next_decode % b->depth];
    float *ann = j->ann, *probs = j->probs;
    memset(j, 0, sizeof *j);
    j->ann = ann, j->probs = probs, j->in = in, j->tag = tag, j->searched_with = 1;
    *i = b->next_decode++;
    return 1;
}

/* A lane: takes photos until none will come, searching the waiting ones when max_search wait or no
 * photo can be taken. Without a lane (the decoding thread of one lane), only decodes. */
static void lane_loop(batch *b, ac_captioner_lane *lane) {
    pthread_mutex_lock(&b->mu);
    for (;;) {
        int i = 0;
        if (b->whole) { /* a lone photo has every thread until its CNNs are done */
            pthread_cond_wait(&b->cv, &b->mu);
            continue;
        }
        const int got = lane && b->n_waiting >= b->max_search ? 0 : take(b, &i);
        if (lane && b->n_waiting > 0 && got != 1) {
            int which[SEARCH_BATCH], n = b->n_waiting;
            memcpy(which, b->waiting, sizeof *which * (size_t)n);
            b->n_waiting = 0;
            b->busy++;
            pthread_mutex_unlock(&b->mu);
            search_jobs(b, which, n);
            pthread_mutex_lock(&b->mu);
            b->busy--;
            mark_done(b, which, n);
        } else if (got == 1) {
            /* a source's photo (a server's request) while every other lane idles: its CNNs on all the
             * threads, the others waiting meanwhile rather than share the cores (a lone request to
             * `attncap serve` on 2 cores took 54 ms, its CNNs in turn on one of them). Its search is a
             * lane's as before. Not for lists, whose lanes all start at once. */
            const int whole = lane && b->src && b->busy == 0 && b->n_waiting == 0;
            b->busy++, b->whole = whole;
            pthread_mutex_unlock(&b->mu);
            job *j = &b->ring[i % b->depth];
            decode_job(b, j);
            if (lane) encode_job(b, lane, j, whole);
            pthread_mutex_lock(&b->mu);
            b->busy--;
            if (whole) b->whole = 0, pthread_cond_broadcast(&b->cv);
            if (lane && j->ok) {
                j->state = ENCODED;
                b->waiting[b->n_waiting++] = i;
            } else {
                j->state = lane ? DONE : DECODED;
                pthread_cond_broadcast(&b->cv);
            }
        } else if (got < 0) {
            break; /* nothing waiting (a lane's are searched first), nothing to come */
        } else if (b->src && b->next_decode < b->delivered + b->depth) {
            pthread_mutex_unlock(&b->mu); /* nothing to do until the source has a photo */
            b->src->wait(b->src->user);
            pthread_mutex_lock(&b->mu);
        } else {
            pthread_cond_wait(&b->cv, &b->mu); /* the next photo's ring slot is not handed out yet */
        }
    }
    pthread_mutex_unlock(&b->mu);
}

/* Task 0, the caller's thread: results in input order (and the CNN, with one lane). */
static void deliver_loop(batch *b) {
    for (int i = 0;; i++) {
        job *j = &b->ring[i % b->depth];
        double tw = ac_now();
        pthread_mutex_lock(&b->mu);
        while (!(i < b->next_decode && j->state == (b->single ? DECODED : DONE)) && !(b->ended && i >= b->next_decode))
            pthread_cond_wait(&b->cv, &b->mu);
        const int over = i >= b->next_decode;
        pthread_mutex_unlock(&b->mu);
        if (over) break;
        const double waited = ac_now() - tw;
        b->t_wait += waited;
        if (b->single) run_job(b->cap, j);
        const ac_batch_result r = {.index = i, .path = j->in.path, .tag = j->tag, .searched_with = j->searched_with,
                                   .ok = j->ok, .run_failed = j->run_failed,
                                   .err = j->err,
                                   .photo = b->keep_photo && j->ok ? (j->kept.px ? &j->kept : &j->photo) : NULL,
                                   .caption = &j->cap, .t_decode = j->t_decode, .t_cnn = j->t_cnn,
                                   .t_search = j->t_bs, .t_wait = waited};
        b->on_result(b->user, &r);
        ac_caption_free(&j->cap);
        ac_image_free(&j->photo), ac_image_free(&j->square), ac_image_free(&j->kept);
        pthread_mutex_lock(&b->mu);
        j->state = FREE;
        b->delivered = i + 1;
        pthread_cond_broadcast(&b->cv);
        pthread_mutex_unlock(&b->mu);
    }
}

static void batch_task(void *arg, int task, int thread) {
    (void)thread;
    batch *b = arg;
    if (task == 0) deliver_loop(b);
    else lane_loop(b, b->lanes ? &b->lanes[task - 1] : NULL);
}

int ac_captioner_batch(ac_captioner *c, const char *const *paths, int n, int threads, int keep_photos,
                       void (*on_result)(void *user, const ac_batch_result *r), void *user, ac_batch_stats *stats,
                       ac_err *err) {
    if (stats) memset(stats, 0, sizeof *stats);
    if (n <= 0) return 0;
    ac_input *in = ac_calloc((size_t)n, sizeof *in);
    if (!in) return ac_errf(err, "out of memory");
    for (int i = 0; i < n; i++) in[i].path = paths[i];
    const int rc = ac_captioner_batch_inputs(c, in, n, threads, keep_photos, on_result, user, stats, err);
    free(in);
    return rc;
}

int ac_captioner_batch_lanes(int threads, int n, int *lane_threads) {
    enum { MAX_LANES = 63 }; /* + the delivering task: ac_parallel_all's 64 */
    const int nthreads = threads > 0 ? threads : ac_default_threads();
    int nlanes = nthreads < n ? nthreads : n;
    if (nlanes < 2) nlanes = 1;
    if (nlanes > MAX_LANES) nlanes = MAX_LANES;
    if (lane_threads) *lane_threads = nlanes > 1 ? nthreads / nlanes : nthreads;
    return nlanes;
}

/* A list (in, n) or a source (src, n unbounded). */
static int run_batch(ac_captioner *c, const ac_input *in, int n, const ac_batch_source *src, int threads,
                     int keep_photos, void (*on_result)(void *user, const ac_batch_result *r), void *user,
                     ac_batch_stats *stats, ac_err *err) {
    if (stats) memset(stats, 0, sizeof *stats);
    if (n <= 0) return 0;
    /* Lanes: one per thread over many photos (each CNN single-threaded), else one with all threads. */
    int lane_threads;
    const int nlanes = ac_captioner_batch_lanes(threads, n, &lane_threads);
    batch b = {.cap = c, .in = in, .src = src, .n = n, .keep_photo = keep_photos, .single = nlanes == 1,
               .on_result = on_result, .user = user, .max_search = SEARCH_BATCH};
    if (src && src->max_search > 0 && src->max_search < SEARCH_BATCH) b.max_search = src->max_search;
    /* lanes: room for a batch waiting for its search, the next one filling, and a photo per lane */
    b.depth = nlanes == 1 ? 3 : 2 * SEARCH_BATCH + nlanes + 2;
    b.ring = ac_calloc((size_t)b.depth, sizeof *b.ring);
    b.lanes = nlanes > 1 ? ac_calloc((size_t)nlanes, sizeof *b.lanes) : NULL;
    int rc = -1, opened = 0, ok = b.ring && (nlanes == 1 || b.lanes);
    for (int k = 0; ok && nlanes > 1 && k < b.depth; k++) {
        ok = (b.ring[k].ann = ac_malloc(sizeof(float) * (size_t)c->model.dec.cfg.n_ann * c->D)) != NULL;
        if (ok && c->head) ok = (b.ring[k].probs = ac_malloc(sizeof(float) * ((size_t)c->n_windows + 1) * c->n_classes)) != NULL;
    }
    if (!ok) {
        ac_errf(err, "out of memory");
        goto done;
    }
    for (; opened < nlanes && nlanes > 1; opened++)
        if (ac_captioner_lane_open(c, lane_threads, &b.lanes[opened], err)) goto done;
    pthread_mutex_init(&b.mu, NULL);
    pthread_cond_init(&b.cv, NULL);
    rc = ac_parallel_all(nlanes + 1, batch_task, &b);
    if (rc) ac_errf(err, "cannot start the %s threads", nlanes > 1 ? "captioning" : "decoding");
    pthread_mutex_destroy(&b.mu);
    pthread_cond_destroy(&b.cv);
    if (stats) stats->lanes = nlanes, stats->lane_threads = lane_threads, stats->t_wait = b.t_wait;
done:
    for (int l = 0; l < opened; l++) ac_captioner_lane_close(&b.lanes[l]);
    free(b.lanes);
    if (b.ring)
        for (int k = 0; k < b.depth; k++) {
            ac_caption_free(&b.ring[k].cap);
            ac_image_free(&b.ring[k].photo), ac_image_free(&b.ring[k].square);
            free(b.ring[k].ann), free(b.ring[k].probs);
        }
    free(b.ring);
    return rc;
}

int ac_captioner_batch_inputs(ac_captioner *c, const ac_input *in, int n, int threads, int keep_photos,
                              void (*on_result)(void *user, const ac_batch_result *r), void *user,
                              ac_batch_stats *stats, ac_err *err) {
    return run_batch(c, in, n, NULL, threads, keep_photos, on_result, user, stats, err);
}

int ac_captioner_batch_stream(ac_captioner *c, const ac_batch_source *src, int threads, int keep_photos,
                              void (*on_result)(void *user, const ac_batch_result *r), void *user, ac_err *err) {
    return run_batch(c, NULL, INT_MAX, src, threads, keep_photos, on_result, user, NULL, err);
}
