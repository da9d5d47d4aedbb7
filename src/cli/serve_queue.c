/* attncap serve's batching queue: the HTTP threads queue photos; each worker thread owns a captioner
 * and runs one ac_caption_stream (attncap.h) over the queue for as long as the server runs, so its lanes
 * stay open and busy as the CLI's do over a list of photos: a lane takes the next queued photo as soon
 * as it is free, and photos encoded meanwhile are searched together, up to max_batch (dynamic
 * batching: no waiting for a batch to fill, so a lone request is answered at once). Each answer goes
 * out as soon as its photo (and those taken before it) are captioned. */
#include <cjson/cJSON.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/attncap.h"
#include "serve.h"

struct cli_queue {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int n_workers;
    struct worker {
        pthread_t t;
        ac_captioner *c;
        struct cli_queue *q;
    } *workers;
    cli_job **jobs; /* a ring of cap slots */
    int cap, head, n, max_batch, stopping;
};

/* {"error": msg} as a malloc'ed string. */
static char *error_json(const char *msg) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "error", msg);
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

/* The caption's JSON line, as `attncap caption --json` prints it, with at most nbest - 1 runners-up
 * ("alternatives" dropped for nbest 1, as the CLI prints it without --nbest). */
static char *result_json(const ac_captioner *c, const ac_result *r, const cli_job *j) {
    char *line = ac_result_json(c, r, "", j->attention ? AC_JSON_ATTENTION : 0);
    if (!line || r->n_alternatives <= j->nbest - 1) return line;
    cJSON *o = cJSON_Parse(line);
    ac_free(line);
    if (!o) return NULL;
    if (j->nbest <= 1) cJSON_DeleteItemFromObject(o, "alternatives");
    else {
        cJSON *alts = cJSON_GetObjectItem(o, "alternatives");
        while (cJSON_GetArraySize(alts) > j->nbest - 1) cJSON_DeleteItemFromArray(alts, cJSON_GetArraySize(alts) - 1);
    }
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

/* A photo that failed: unreadable is 400 (too many pixels 413), a failure of the captioner 500
 * (r->error_code AC_ERR_BAD_IMAGE unless the encoder or the search failed). */
static int error_status(const ac_result *r) {
    if (r->error_code != AC_ERR_BAD_IMAGE) return 500;
    return strstr(r->error, "too large") || strstr(r->error, "over the limit") ? 413 : 400;
}

static void finish(cli_queue *q, cli_job *j, int status, char *json, int batch) {
    pthread_mutex_lock(&q->mu);
    j->status = json ? status : 500;
    j->json = json;
    j->batch = batch;
    j->done = 1;
    MHD_resume_connection(j->conn);
    pthread_mutex_unlock(&q->mu);
}

/* The stream's source (ac_stream_next_fn): the queue's oldest photo. */
static int source_next(void *user, ac_input *in, void **tag) {
    cli_queue *q = ((struct worker *)user)->q;
    pthread_mutex_lock(&q->mu);
    cli_job *j = NULL;
    if (q->n) {
        j = q->jobs[q->head];
        q->head = (q->head + 1) % q->cap;
        q->n--;
    }
    const int ended = !j && q->stopping;
    pthread_mutex_unlock(&q->mu);
    if (!j) return ended ? -1 : 0;
    *in = (ac_input){.data = j->data, .size = j->size};
    *tag = j;
    return 1;
}

static void source_wait(void *user) {
    cli_queue *q = ((struct worker *)user)->q;
    pthread_mutex_lock(&q->mu);
    while (!q->n && !q->stopping) pthread_cond_wait(&q->cv, &q->mu);
    pthread_mutex_unlock(&q->mu);
}

static void on_result(void *user, void *tag, ac_result *r, int together) {
    const struct worker *w = user;
    cli_job *j = tag;
    cli_metrics_batch(together);
    if (!r) finish(w->q, j, 500, error_json("out of memory"), together);
    else if (r->error) finish(w->q, j, error_status(r), error_json(r->error), together);
    else finish(w->q, j, 200, result_json(w->c, r, j), together);
    ac_result_free(r);
}

static void *worker(void *arg) {
    struct worker *w = arg;
    cli_queue *q = w->q;
    for (;;) {
        ac_err err = {{0}, 0};
        if (ac_caption_stream(w->c, source_next, source_wait, on_result, w, q->max_batch, 0, &err) == 0)
            return NULL; /* the queue stopped, and nothing is left in it */
        /* the lanes or threads could not be set up (out of memory): what is queued is answered 500
         * with the reason, and the stream is tried again for the next photo */
        void *tag;
        ac_input in;
        int got;
        while ((got = source_next(w, &in, &tag)) == 1) finish(q, tag, 500, error_json(err.msg), 0);
        if (got < 0) return NULL;
        source_wait(w);
    }
}

cli_queue *cli_queue_start(ac_captioner *const *cs, int n_workers, int cap, int max_batch) {
    cli_queue *q = calloc(1, sizeof *q);
    if (!q) return NULL;
    q->jobs = calloc((size_t)cap, sizeof *q->jobs);
    q->workers = calloc((size_t)n_workers, sizeof *q->workers);
    q->cap = cap, q->max_batch = max_batch;
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->cv, NULL);
    if (q->jobs && q->workers)
        for (; q->n_workers < n_workers; q->n_workers++) {
            struct worker *w = &q->workers[q->n_workers];
            w->c = cs[q->n_workers], w->q = q;
            if (pthread_create(&w->t, NULL, worker, w) != 0) break;
        }
    if (q->n_workers < n_workers) {
        cli_queue_stop(q);
        cli_queue_free(q);
        return NULL;
    }
    return q;
}

int cli_queue_submit(cli_queue *q, cli_job *j) {
    pthread_mutex_lock(&q->mu);
    if (q->n == q->cap || q->stopping) {
        pthread_mutex_unlock(&q->mu);
        return -1;
    }
    q->jobs[(q->head + q->n) % q->cap] = j;
    q->n++;
    MHD_suspend_connection(j->conn); /* under the lock: the worker cannot resume it before this */
    pthread_cond_signal(&q->cv);
    pthread_mutex_unlock(&q->mu);
    return 0;
}

int cli_queue_length(cli_queue *q) {
    pthread_mutex_lock(&q->mu);
    int n = q->n;
    pthread_mutex_unlock(&q->mu);
    return n;
}

void cli_queue_stop(cli_queue *q) {
    pthread_mutex_lock(&q->mu);
    q->stopping = 1;
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
    for (int i = 0; i < q->n_workers; i++) pthread_join(q->workers[i].t, NULL);
    q->n_workers = 0;
}

void cli_queue_free(cli_queue *q) {
    if (!q) return;
    pthread_cond_destroy(&q->cv);
    pthread_mutex_destroy(&q->mu);
    free(q->jobs);
    free(q->workers);
    free(q);
}
