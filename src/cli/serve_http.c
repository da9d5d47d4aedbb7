/* attncap serve's HTTP front on libmicrohttpd: routes, request bodies (raw or multipart, through
 * libmicrohttpd's post processor), limits, answers; what the bytes say is read by serve_request.c.
 * Captions go through the batching queue; the connection waits suspended meanwhile, so no HTTP thread
 * is held by a photo being captioned, and none by a slow sender (libmicrohttpd polls; a body not
 * received within body_timeout is answered 408 and its connection closed, headers that slow as well
 * (serve_watch.c); a connection silent for idle_timeout is closed by libmicrohttpd).
 * The only files served are the page embedded in the binary; no request names a path we open. */
#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <math.h>
#include <microhttpd.h>
#include <netdb.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "serve.h"
#include "serve_request.h"

struct cli_server {
    struct MHD_Daemon *d;
    cli_server_opts o;
    const char *model_path;
    cli_queue *q;
    int queue_cap;
    pthread_mutex_t mu;
    int in_flight; /* requests begun and not yet completed */
    cli_watch *watch; /* connections whose headers are slow (serve_watch.c) */
};

/* The connection's place on the watch (its socket context), or NULL. */
static void *watched(struct MHD_Connection *conn) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

static void notify(void *cls, struct MHD_Connection *conn, void **socket_context, enum MHD_ConnectionNotificationCode toe) {
    cli_server *s = cls;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        *socket_context = ci ? cli_watch_add(s->watch, ci->connect_fd) : NULL;
    } else {
        cli_watch_remove(s->watch, *socket_context);
        *socket_context = NULL;
    }
}

enum route { R_PAGE, R_CAPTION, R_EVALUATE, R_HEALTH, R_METRICS, R_OTHER };
static const char *const route_path[] = {"/", "/v1/caption", "/v1/evaluate", "/v1/health", "/metrics", "other"};

typedef struct req {
    enum route route;
    double t0;
    int status;         /* of the answer queued, 0 before */
    int has_body;       /* a POST whose body is read into body */
    cli_body body;      /* under the server's max_body */
    struct MHD_PostProcessor *pp; /* multipart/form-data: field "photo" goes into body */
    int refuse;         /* the status to answer when the body ends (too big, malformed): the rest is dropped */
    int submitted;
    cli_job job;
} req;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static enum MHD_Result reply(struct MHD_Connection *conn, req *r, int status, const char *type, const void *body,
                             size_t len, enum MHD_ResponseMemoryMode mode) {
    struct MHD_Response *res = MHD_create_response_from_buffer(len, (void *)body, mode);
    if (!res) return MHD_NO;
    MHD_add_response_header(res, "Content-Type", type);
    MHD_add_response_header(res, "X-Content-Type-Options", "nosniff");
    if (r->route != R_PAGE) MHD_add_response_header(res, "Cache-Control", "no-store");
    if (status == 503) MHD_add_response_header(res, "Retry-After", "1");
    if (status == 408 || status == 413) MHD_add_response_header(res, "Connection", "close");
    enum MHD_Result ok = MHD_queue_response(conn, (unsigned)status, res);
    MHD_destroy_response(res);
    r->status = status;
    return ok;
}

/* {"error": "..."} with status. */
static enum MHD_Result reply_error(struct MHD_Connection *conn, req *r, int status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static enum MHD_Result reply_error(struct MHD_Connection *conn, req *r, int status, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "error", msg);
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (!s) return MHD_NO;
    return reply(conn, r, status, "application/json", s, strlen(s), MHD_RESPMEM_MUST_FREE);
}

static enum MHD_Result reply_json(struct MHD_Connection *conn, req *r, int status, cJSON *o) {
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (!s) return reply_error(conn, r, 500, "out of memory");
    return reply(conn, r, status, "application/json", s, strlen(s), MHD_RESPMEM_MUST_FREE);
}

/* The first call for a request: the route, the method, the headers. Returns 1 after queueing an answer
 * that needs no body (or refuses it), 0 to go on reading the body. */
static int begin(cli_server *s, struct MHD_Connection *conn, req *r, const char *method, enum MHD_Result *ret) {
    const int get = !strcmp(method, "GET") || !strcmp(method, "HEAD"), post = !strcmp(method, "POST");
    const int want_post = r->route == R_CAPTION || r->route == R_EVALUATE;
    if (r->route == R_OTHER) return *ret = reply_error(conn, r, 404, "no such resource"), 1;
    if (want_post ? !post : !get) {
        *ret = reply_error(conn, r, 405, "use %s", want_post ? "POST" : "GET");
        return 1;
    }
    if (!want_post) return 0;
    const char *len = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (cli_body_announced_over(len, s->o.max_body))
        return *ret = reply_error(conn, r, 413, "request body of %s bytes is over the limit of %zu", len, s->o.max_body), 1;
    char t[128];
    cli_media_type(MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE), t, sizeof t);
    if (r->route == R_EVALUATE) {
        if (t[0] && strcmp(t, "application/json") != 0)
            return *ret = reply_error(conn, r, 415, "content type '%s': send application/json", t), 1;
    } else if (!strcmp(t, "multipart/form-data")) {
        r->pp = MHD_create_post_processor(conn, 65536, cli_post_field, &r->body);
        if (!r->pp) return *ret = reply_error(conn, r, 400, "multipart/form-data without a boundary"), 1;
    } else if (!cli_photo_type(t))
        return *ret = reply_error(conn, r, 415, "content type '%s': send a photo (image/jpeg, image/png, image/webp, "
                                               "image/tiff, image/bmp) or multipart/form-data with a field 'photo'", t), 1;
    r->has_body = 1;
    return 0;
}

static enum MHD_Result caption(cli_server *s, struct MHD_Connection *conn, req *r) {
    if (r->submitted) { /* resumed: the worker's answer */
        if (!r->job.json) return reply_error(conn, r, 500, "out of memory");
        char *j = r->job.json;
        r->job.json = NULL;
        return reply(conn, r, r->job.status, "application/json", j, strlen(j), MHD_RESPMEM_MUST_FREE);
    }
    if (!r->body.n) return reply_error(conn, r, 400, r->pp ? "no field 'photo' in the form" : "empty request body: send the photo");
    const char *a = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "attention");
    const char *nb = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "nbest");
    int nbest;
    if (cli_query_nbest(nb, s->o.max_nbest, &nbest) < 0)
        return reply_error(conn, r, 400, "nbest '%s': a whole number from 1 to %d", nb, s->o.max_nbest);
    r->job = (cli_job){r->body.data, r->body.n, cli_query_flag(a), nbest, conn, 0, 0, NULL, 0};
    if (cli_queue_submit(s->q, &r->job) < 0) return reply_error(conn, r, 503, "busy: the queue is full, retry later");
    r->submitted = 1;
    return MHD_YES;
}

/* POST /v1/evaluate {"references": [["ref", ...], ...], "candidates": ["caption", ...], "meteor": bool}. */
static enum MHD_Result evaluate(struct MHD_Connection *conn, req *r) {
    cli_eval_body e;
    const char *bad = cli_eval_body_parse(r->body.data, r->body.n, &e);
    if (bad) return reply_error(conn, r, strcmp(bad, "out of memory") ? 400 : 500, "%s", bad);
    ac_metrics m;
    ac_err err = {{0}, 0};
    int rc = ac_evaluate(e.n, e.cand, (const char *const *const *)e.ref, e.nref, e.no_meteor ? AC_EVAL_NO_METEOR : 0, &m, &err);
    cli_eval_body_free(&e);
    if (rc < 0) return reply_error(conn, r, 400, "%s", err.msg);
    cJSON *out = cJSON_CreateObject();
    cJSON_AddNumberToObject(out, "n", m.n);
    cJSON_AddItemToObject(out, "bleu", cJSON_CreateDoubleArray(m.bleu, 4));
    if (isnan(m.meteor)) cJSON_AddNullToObject(out, "meteor");
    else cJSON_AddNumberToObject(out, "meteor", m.meteor);
    cJSON_AddNumberToObject(out, "rouge_l", m.rouge_l);
    cJSON_AddNumberToObject(out, "cider_d", m.cider_d);
    return reply_json(conn, r, 200, out);
}

static enum MHD_Result get(cli_server *s, struct MHD_Connection *conn, req *r) {
    if (r->route == R_PAGE)
        return reply(conn, r, 200, "text/html; charset=utf-8", cli_page_html, cli_page_html_len, MHD_RESPMEM_PERSISTENT);
    if (r->route == R_HEALTH) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "status", "ok");
        cJSON_AddStringToObject(o, "version", ac_version());
        cJSON_AddStringToObject(o, "model", s->model_path);
        cJSON_AddNumberToObject(o, "queue", cli_queue_length(s->q));
        cJSON_AddNumberToObject(o, "queue_capacity", s->queue_cap);
        cJSON_AddNumberToObject(o, "max_body", (double)s->o.max_body);
        cJSON_AddNumberToObject(o, "max_nbest", s->o.max_nbest);
        return reply_json(conn, r, 200, o);
    }
    char *t = cli_metrics_text(cli_queue_length(s->q), s->queue_cap);
    if (!t) return reply_error(conn, r, 500, "out of memory");
    return reply(conn, r, 200, "text/plain; version=0.0.4; charset=utf-8", t, strlen(t), MHD_RESPMEM_MUST_FREE);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                              const char *version, const char *upload_data, size_t *upload_data_size, void **con_cls) {
    cli_server *s = cls;
    req *r = *con_cls;
    if (!r) {
        if (!(r = calloc(1, sizeof *r))) return MHD_NO;
        *con_cls = r;
        cli_watch_mark(s->watch, watched(conn), 1); /* its headers are in: its own deadline from now */
        r->t0 = now();
        r->body.max = s->o.max_body;
        r->route = R_OTHER;
        const char *u = !strcmp(url, "/index.html") ? "/" : url;
        for (int i = 0; i < R_OTHER; i++)
            if (!strcmp(u, route_path[i])) r->route = (enum route)i;
        pthread_mutex_lock(&s->mu);
        s->in_flight++;
        pthread_mutex_unlock(&s->mu);
        enum MHD_Result ret = MHD_YES;
        return begin(s, conn, r, method, &ret) ? ret : MHD_YES;
    }
    if (r->status) { /* answered already (a refusal on the first call): drop what else comes */
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (*upload_data_size) {
        const size_t size = *upload_data_size;
        *upload_data_size = 0;
        if (!r->has_body) return MHD_YES;
        if (now() - r->t0 > s->o.body_timeout) {
            /* libmicrohttpd 0.9.75 refuses a response queued before the body has ended (MHD_queue_response
             * returns MHD_NO while it reads one), so the 408 is written on the socket, whose output is idle
             * while a body is read, just before the connection is closed */
            const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
            if (ci) cli_write_408(ci->connect_fd, s->o.body_timeout);
            r->status = 408;
            return MHD_NO; /* closes the connection */
        }
        if (r->refuse) return MHD_YES; /* the rest of a refused body, dropped; answered at its end */
        if (r->pp ? MHD_post_process(r->pp, upload_data, size) != MHD_YES : cli_body_append(&r->body, upload_data, size) < 0)
            r->refuse = r->body.too_big ? 413 : r->pp ? 400 : 500;
        if (r->refuse) cli_body_free(&r->body);
        return MHD_YES;
    }
    if (r->refuse == 413) return reply_error(conn, r, 413, "request body over the limit of %zu bytes", s->o.max_body);
    if (r->refuse) return reply_error(conn, r, r->refuse, r->refuse == 400 ? "malformed multipart/form-data body" : "out of memory");
    if (r->route == R_CAPTION) return caption(s, conn, r);
    if (r->route == R_EVALUATE) return evaluate(conn, r);
    return get(s, conn, r);
}

static void completed(void *cls, struct MHD_Connection *conn, void **con_cls, enum MHD_RequestTerminationCode why) {
    cli_server *s = cls;
    req *r = *con_cls;
    cli_watch_mark(s->watch, watched(conn), 0); /* the next request's headers: due in --timeout */
    if (!r) return;
    /* a connection libmicrohttpd closed for being silent --timeout seconds mid-request counts as 408 (it is
     * closed without an answer: no callback comes to queue one); a client gone before its answer as
     * 499, nginx's "client closed request" */
    const int status = r->status ? r->status : why == MHD_REQUEST_TERMINATED_TIMEOUT_REACHED ? 408 : 499;
    cli_metrics_request(route_path[r->route], status, now() - r->t0);
    if (r->pp) MHD_destroy_post_processor(r->pp);
    free(r->job.json);
    cli_body_free(&r->body);
    free(r);
    *con_cls = NULL;
    pthread_mutex_lock(&s->mu);
    s->in_flight--;
    pthread_mutex_unlock(&s->mu);
}

cli_server *cli_server_start(const cli_server_opts *opts, const char *model_path, cli_queue *q, const char **why) {
    cli_server *s = calloc(1, sizeof *s);
    if (!s) return *why = "out of memory", NULL;
    s->o = *opts, s->model_path = model_path, s->q = q;
    s->queue_cap = opts->queue_cap;
    pthread_mutex_init(&s->mu, NULL);
    /* a second past libmicrohttpd's own timeout, which closes a silent connection first */
    if (!(s->watch = cli_watch_start(opts->body_timeout + 1.0))) {
        pthread_mutex_destroy(&s->mu);
        free(s);
        return *why = "out of memory or threads", NULL;
    }
    char port[16];
    snprintf(port, sizeof port, "%d", opts->port);
    struct addrinfo hints = {0}, *ai = NULL;
    hints.ai_family = AF_UNSPEC, hints.ai_socktype = SOCK_STREAM, hints.ai_flags = AI_PASSIVE;
    int g = getaddrinfo(opts->host, port, &hints, &ai);
    if (g != 0) {
        *why = gai_strerror(g);
        cli_server_free(s);
        return NULL;
    }
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_ALLOW_SUSPEND_RESUME |
                     (ai->ai_family == AF_INET6 ? MHD_USE_IPv6 : 0);
    s->d = MHD_start_daemon(flags, 0, NULL, NULL, handle, s, MHD_OPTION_SOCK_ADDR, ai->ai_addr,
                            MHD_OPTION_NOTIFY_COMPLETED, completed, s, MHD_OPTION_NOTIFY_CONNECTION, notify, s,
                            MHD_OPTION_CONNECTION_TIMEOUT,
                            opts->idle_timeout, MHD_OPTION_THREAD_POOL_SIZE, (unsigned)opts->http_threads,
                            MHD_OPTION_CONNECTION_LIMIT, 1000u, MHD_OPTION_END);
    freeaddrinfo(ai);
    if (!s->d) {
        *why = "cannot listen there (in use, or not an address of this machine)";
        cli_server_free(s);
        return NULL;
    }
    return s;
}

int cli_server_port(const cli_server *s) {
    const union MHD_DaemonInfo *i = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
    return i ? i->port : 0;
}

int cli_server_drain(cli_server *s, double grace_seconds) {
    MHD_socket fd = MHD_quiesce_daemon(s->d); /* no new connections; those open finish */
    const double t0 = now();
    int left;
    for (;;) {
        pthread_mutex_lock(&s->mu);
        left = s->in_flight;
        pthread_mutex_unlock(&s->mu);
        if (!left || now() - t0 > grace_seconds) break;
        usleep(10000);
    }
    if (fd != MHD_INVALID_SOCKET) close(fd);
    return left;
}

void cli_server_free(cli_server *s) {
    if (!s) return;
    cli_watch_stop(s->watch);
    if (s->d) MHD_stop_daemon(s->d); /* each connection unwatched as it closes */
    cli_watch_free(s->watch);
    pthread_mutex_destroy(&s->mu);
    free(s);
}
