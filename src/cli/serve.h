/* attncap serve's pieces (src/cli/serve_*.c): the HTTP front (libmicrohttpd), the batching queue in
 * front of the captioners, the Prometheus counters and the embedded page; what a request's bytes say is
 * read by serve_request.h (apart from any connection, fuzzed by fuzz/fuzz_serve.c). Built on the core API
 * (attncap/attncap.h), the queue on its stream (ac_caption_stream). */
#ifndef ATTNCAP_CLI_SERVE_H
#define ATTNCAP_CLI_SERVE_H
#include <stddef.h>
#include <stdint.h>

#include "attncap/attncap.h"

struct MHD_Connection;

/* ---- The batching queue (serve_queue.c) --------------------------------------------------------- */

/* One photo to caption. The HTTP side fills data..nbest, submits, and suspends its connection; the
 * worker fills status..json, sets done and resumes the connection. */
typedef struct cli_job {
    unsigned char *data; /* the encoded photo (owned by the HTTP side) */
    size_t size;
    int attention;       /* add the attention grids (AC_JSON_ATTENTION) */
    int nbest;           /* captions to return: the best and nbest - 1 runners-up */
    struct MHD_Connection *conn;
    int done;
    int status;          /* HTTP status: 200, 400 (unreadable photo), 413 (too many pixels), 500 */
    char *json;          /* the answer's body (malloc'ed): the caption's JSON line or {"error": ...} */
    int batch;           /* the photos searched together with it, itself included */
} cli_job;

typedef struct cli_queue cli_queue;

/* A queue of at most cap photos and n_workers threads, each owning captioner cs[i] until
 * cli_queue_stop and running one ac_caption_stream over the queue (its lanes take queued photos
 * as they come; those encoded meanwhile are searched together, up to max_batch of them). Photos being
 * captioned are no longer in the queue: a worker holds at most its ring's few. NULL when out of memory
 * or threads. */
cli_queue *cli_queue_start(ac_captioner *const *cs, int n_workers, int cap, int max_batch);
/* 0: queued (the worker resumes j->conn when j->done); -1: the queue is full (answer 503). The
 * caller suspends j->conn before the worker can resume it: cli_queue_submit does both under the
 * queue's lock. */
int cli_queue_submit(cli_queue *q, cli_job *j);
int cli_queue_length(cli_queue *q);
/* Captions what is queued and stops the worker; later submissions are refused. */
void cli_queue_stop(cli_queue *q);
/* Frees the queue once nothing can reach it any more (the captioner is the caller's). NULL is fine. */
void cli_queue_free(cli_queue *q);

/* ---- Metrics (serve_metrics.c) ------------------------------------------------------------------ */

void cli_metrics_request(const char *path, int status, double seconds);
void cli_metrics_batch(int size);
/* The Prometheus text exposition of every counter, malloc'ed; queue_length is reported as a gauge. */
char *cli_metrics_text(int queue_length, int queue_cap);

/* ---- Slow requests (serve_watch.c) ------------------------------------------------------------- */

/* A thread that answers 408 and shuts down each watched connection whose request has not had all its
 * headers `seconds` after it began (the connection's start, or the end of the request before it):
 * libmicrohttpd's own timeout closes only a silent connection. Counted in /metrics as path "other". */
typedef struct cli_watch cli_watch;
cli_watch *cli_watch_start(double seconds); /* NULL: out of memory or threads */
void *cli_watch_add(cli_watch *w, int fd);  /* a new connection; its handle (NULL: out of memory, unwatched) */
void cli_watch_mark(cli_watch *w, void *handle, int in_request); /* 1: its headers are in; 0: answered */
void cli_watch_remove(cli_watch *w, void *handle); /* before the connection's socket is closed */
void cli_watch_stop(cli_watch *w);                 /* joins the thread; NULL is fine */
void cli_watch_free(cli_watch *w);                 /* after stop; NULL is fine */
/* Writes a whole 408 answer on socket fd, best effort (a request not received within `seconds`). */
void cli_write_408(int fd, unsigned seconds);

/* ---- The HTTP front (serve_http.c) -------------------------------------------------------------- */

typedef struct cli_server_opts {
    const char *host;       /* the address to bind, "127.0.0.1" by default */
    int port;               /* 0: any free port */
    size_t max_body;        /* bytes of a request body */
    unsigned body_timeout;  /* seconds to receive a whole request (headers and body) */
    unsigned idle_timeout;  /* seconds a connection may stay silent (libmicrohttpd's timeout) */
    int http_threads;       /* libmicrohttpd's polling threads */
    int max_nbest;          /* the captioner's nbest: the most a request may ask for */
    int queue_cap;          /* the queue's bound, reported by /v1/health and /metrics */
} cli_server_opts;

typedef struct cli_server cli_server;

/* Listens on opts->host:opts->port and answers with q's captions (model_path: what /v1/health names;
 * kept). NULL after printing nothing: *why says what failed (an address that cannot be bound). */
cli_server *cli_server_start(const cli_server_opts *opts, const char *model_path, cli_queue *q, const char **why);
int cli_server_port(const cli_server *s); /* the bound port (for --port 0) */
/* Stops accepting connections and waits up to grace_seconds for the requests in flight to be
 * answered. Returns the requests still in flight when it gave up (0: drained). */
int cli_server_drain(cli_server *s, double grace_seconds);
void cli_server_free(cli_server *s);

/* ---- The page (serve_page.c): web/index.html, embedded at build time ---------------------------- */

extern const unsigned char cli_page_html[];
extern const unsigned int cli_page_html_len;

#endif
