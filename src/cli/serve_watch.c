/* attncap serve's watch over slow requests that libmicrohttpd (0.9.75) would let run: its timeout
 * closes only a connection that stays silent, so a client sending its headers one byte a second holds
 * a connection for as long as it likes. Each connection is on a list with the time its current request
 * began (the connection's start, or the end of the request before); a thread closes a connection whose
 * headers have not all arrived seconds after that, answering 408 first. Once the headers are in, the
 * request's own deadline takes over (serve_http.c). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

#include "serve.h"

typedef struct watched {
    struct watched *prev, *next;
    int fd;
    double t0;      /* when its current request began */
    int in_request; /* its headers have arrived */
    int cut;        /* answered 408 and shut down */
} watched;

struct cli_watch {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t t;
    watched *head;
    double seconds;
    int stopping;
};

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

void cli_write_408(int fd, unsigned seconds) {
    char body[128], msg[384];
    const int nb = snprintf(body, sizeof body, "{\"error\":\"the request took more than %u s to arrive\"}", seconds);
    const int n = snprintf(msg, sizeof msg, "HTTP/1.1 408 Request Timeout\r\nContent-Type: application/json\r\n"
                           "Cache-Control: no-store\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", nb, body);
    if (send(fd, msg, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT) < 0 && errno != EAGAIN) return; /* the client is gone */
}

static void *watch_loop(void *arg) {
    cli_watch *w = arg;
    pthread_mutex_lock(&w->mu);
    while (!w->stopping) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 250000000L;
        if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
        pthread_cond_timedwait(&w->cv, &w->mu, &ts);
        const double t = now();
        for (watched *c = w->head; c; c = c->next)
            if (!c->in_request && !c->cut && t - c->t0 > w->seconds) {
                /* under the lock: the connection is not closed (its fd not reused) before it is unwatched */
                cli_write_408(c->fd, (unsigned)(w->seconds + 0.5));
                shutdown(c->fd, SHUT_RDWR); /* libmicrohttpd sees the end and closes it */
                c->cut = 1;
                cli_metrics_request("other", 408, t - c->t0);
            }
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

cli_watch *cli_watch_start(double seconds) {
    cli_watch *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    w->seconds = seconds;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    if (pthread_create(&w->t, NULL, watch_loop, w) != 0) {
        pthread_cond_destroy(&w->cv);
        pthread_mutex_destroy(&w->mu);
        free(w);
        return NULL;
    }
    return w;
}

void *cli_watch_add(cli_watch *w, int fd) {
    watched *c = calloc(1, sizeof *c);
    if (!c) return NULL; /* unwatched: libmicrohttpd's own timeout still applies */
    c->fd = fd, c->t0 = now();
    pthread_mutex_lock(&w->mu);
    c->next = w->head;
    if (w->head) w->head->prev = c;
    w->head = c;
    pthread_mutex_unlock(&w->mu);
    return c;
}

void cli_watch_remove(cli_watch *w, void *handle) {
    watched *c = handle;
    if (!c) return;
    pthread_mutex_lock(&w->mu);
    if (c->prev) c->prev->next = c->next;
    else w->head = c->next;
    if (c->next) c->next->prev = c->prev;
    pthread_mutex_unlock(&w->mu);
    free(c);
}

void cli_watch_mark(cli_watch *w, void *handle, int in_request) {
    watched *c = handle;
    if (!c) return;
    pthread_mutex_lock(&w->mu);
    c->in_request = in_request;
    if (!in_request) c->t0 = now(); /* the next request's clock */
    pthread_mutex_unlock(&w->mu);
}

void cli_watch_stop(cli_watch *w) {
    if (!w) return;
    pthread_mutex_lock(&w->mu);
    w->stopping = 1;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->t, NULL);
}

void cli_watch_free(cli_watch *w) {
    if (!w) return;
    while (w->head) cli_watch_remove(w, w->head);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w);
}
