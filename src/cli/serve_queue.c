/* attncap serve's batching queue: each worker thread owns a captioner and captions whatever the
 * HTTP threads queued since its last batch, up to max_batch photos, in one ac_caption_batch call
 * (dynamic batching: no waiting for a batch to fill, so a lone request is answered at once). */
#include <cjson/cJSON.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* The result's JSON line with at most nbest - 1 runners-up ("alternatives" dropped for nbest 1, as
 * `attncap caption --json` prints it without --nbest). */
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

/* A photo the library refused: too many pixels is 413, any other unreadable photo 400, the rest 500. */
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

static void caption_batch(cli_queue *q, ac_captioner *c, cli_job **batch, int n) {
    ac_input in[n];
    ac_result *out[n];
    memset(in, 0, sizeof in);
    for (int i = 0; i < n; i++) in[i].data = batch[i]->data, in[i].size = batch[i]->size;
    ac_err err = {{0}, 0};
    cli_metrics_batch(n);
    if (ac_caption_batch(c, in, n, 0, out, &err) < 0) {
        for (int i = 0; i < n; i++) finish(q, batch[i], 500, error_json(err.msg), n);
        return;
    }
    for (int i = 0; i < n; i++) {
        if (out[i]->error) finish(q, batch[i], error_status(out[i]), error_json(out[i]->error), n);
        else finish(q, batch[i], 200, result_json(c, out[i], batch[i]), n);
        ac_result_free(out[i]);
    }
}

static void *worker(void *arg) {
    const struct worker *w = arg;
    cli_queue *q = w->q;
    cli_job *batch[q->max_batch];
    for (;;) {
        pthread_mutex_lock(&q->mu);
        while (!q->n && !q->stopping) pthread_cond_wait(&q->cv, &q->mu);
        if (!q->n) { /* stopping, and nothing left */
            pthread_mutex_unlock(&q->mu);
            return NULL;
        }
        int n = q->n < q->max_batch ? q->n : q->max_batch;
        for (int i = 0; i < n; i++) batch[i] = q->jobs[(q->head + i) % q->cap];
        q->head = (q->head + n) % q->cap;
        q->n -= n;
        pthread_mutex_unlock(&q->mu);
        caption_batch(q, w->c, batch, n);
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
