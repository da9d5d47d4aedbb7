/* attncap serve's counters, in Prometheus's text exposition format (version 0.0.4): requests by path
 * and status, errors (status >= 400), a latency histogram, the sizes of the search batches (per photo). */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve.h"

/* Paths are counted under their route's name, so a client cannot grow the table: anything else is
 * "other". */
static const char *const paths[] = {"/", "/v1/caption", "/v1/evaluate", "/v1/health", "/metrics", "other"};
enum { N_PATHS = sizeof paths / sizeof *paths, N_STATUS = 16 };
static const double latency_le[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};
enum { N_LAT = sizeof latency_le / sizeof *latency_le };
static const int batch_le[] = {1, 2, 4, 8, 16, 32, 64};
enum { N_BATCH = sizeof batch_le / sizeof *batch_le };

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
    int code;
    unsigned long long n;
} counts[N_PATHS][N_STATUS];
static unsigned long long errors, lat_bucket[N_LAT + 1], lat_count, batch_bucket[N_BATCH + 1], batch_count,
    batch_sum;
static double lat_sum;

static int path_index(const char *path) {
    for (int i = 0; i < N_PATHS - 1; i++)
        if (!strcmp(path, paths[i])) return i;
    return N_PATHS - 1;
}

void cli_metrics_request(const char *path, int status, double seconds) {
    const int p = path_index(path);
    pthread_mutex_lock(&mu);
    for (int k = 0; k < N_STATUS; k++)
        if (counts[p][k].code == status || !counts[p][k].code) {
            counts[p][k].code = status;
            counts[p][k].n++;
            break;
        }
    if (status >= 400) errors++;
    int b = 0;
    while (b < N_LAT && seconds > latency_le[b]) b++;
    lat_bucket[b]++;
    lat_count++;
    lat_sum += seconds;
    pthread_mutex_unlock(&mu);
}

void cli_metrics_batch(int size) {
    pthread_mutex_lock(&mu);
    int b = 0;
    while (b < N_BATCH && size > batch_le[b]) b++;
    batch_bucket[b]++;
    batch_count++;
    batch_sum += (unsigned long long)size;
    pthread_mutex_unlock(&mu);
}

typedef struct {
    char *s;
    size_t n, cap;
    int oom;
} buf;

static void put(buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(buf *b, const char *fmt, ...) {
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (k < 0 || b->oom) return;
    if (b->n + (size_t)k + 1 > b->cap) {
        size_t cap = (b->cap + (size_t)k + 1) * 2;
        char *s = realloc(b->s, cap);
        if (!s) {
            b->oom = 1;
            return;
        }
        b->s = s, b->cap = cap;
    }
    memcpy(b->s + b->n, line, (size_t)k + 1);
    b->n += (size_t)k;
}

char *cli_metrics_text(int queue_length, int queue_cap) {
    buf b = {NULL, 0, 0, 0};
    pthread_mutex_lock(&mu);
    put(&b, "# HELP attncap_requests_total HTTP requests answered, by route and status.\n"
            "# TYPE attncap_requests_total counter\n");
    for (int p = 0; p < N_PATHS; p++)
        for (int k = 0; k < N_STATUS && counts[p][k].code; k++)
            put(&b, "attncap_requests_total{path=\"%s\",status=\"%d\"} %llu\n", paths[p], counts[p][k].code,
                counts[p][k].n);
    put(&b, "# HELP attncap_errors_total HTTP requests answered with a status of 400 or more.\n"
            "# TYPE attncap_errors_total counter\nattncap_errors_total %llu\n", errors);
    put(&b, "# HELP attncap_request_seconds Time from a request's headers to its answer.\n"
            "# TYPE attncap_request_seconds histogram\n");
    unsigned long long acc = 0;
    for (int i = 0; i < N_LAT; i++)
        acc += lat_bucket[i], put(&b, "attncap_request_seconds_bucket{le=\"%g\"} %llu\n", latency_le[i], acc);
    put(&b, "attncap_request_seconds_bucket{le=\"+Inf\"} %llu\n", lat_count);
    put(&b, "attncap_request_seconds_sum %.6f\nattncap_request_seconds_count %llu\n", lat_sum, lat_count);
    put(&b, "# HELP attncap_batch_size Photos, by how many were searched together (each photo counted once).\n"
            "# TYPE attncap_batch_size histogram\n");
    acc = 0;
    for (int i = 0; i < N_BATCH; i++)
        acc += batch_bucket[i], put(&b, "attncap_batch_size_bucket{le=\"%d\"} %llu\n", batch_le[i], acc);
    put(&b, "attncap_batch_size_bucket{le=\"+Inf\"} %llu\n", batch_count);
    put(&b, "attncap_batch_size_sum %llu\nattncap_batch_size_count %llu\n", batch_sum, batch_count);
    pthread_mutex_unlock(&mu);
    put(&b, "# HELP attncap_queue_length Photos waiting for the captioner.\n# TYPE attncap_queue_length gauge\n"
            "attncap_queue_length %d\n# HELP attncap_queue_capacity The queue's bound (--queue).\n"
            "# TYPE attncap_queue_capacity gauge\nattncap_queue_capacity %d\n", queue_length, queue_cap);
    if (b.oom) {
        free(b.s);
        return NULL;
    }
    return b.s;
}
