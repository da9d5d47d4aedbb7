/* fuzz/fuzz_serve.c: libFuzzer target for attncap serve's reading of a request (src/cli/serve_request.c,
 * what serve_http.c calls on the bytes a client sends). The first byte picks:
 *   0  a Content-Type value (the rest): cli_media_type into a buffer of the server's 128 bytes and of a
 *      size from the second byte, checked against a plain reimplementation; cli_photo_type on it
 *   1  the query parameters nbest (max_nbest from the second byte) and attention, and a Content-Length
 *      value against a limit: checked against the rule each states, on the rest cut at its first NUL
 *   2  a POST /v1/evaluate body (the rest): cli_eval_body_parse, then ac_evaluate (no METEOR) on what it
 *      accepts, as the server does; a refusal is one of the server's fixed one-line reasons
 *   3  a request body under a limit (second byte), in pieces of a size from the third byte; the rest is
 *      "Content-Type value\n" then the body. For a multipart/form-data type the pieces go through
 *      libmicrohttpd's post processor with the server's field callback (cli_post_field), as in serve_http.c;
 *      the post processor wants a connection whose headers hold the Content-Type, so the harness runs a
 *      libmicrohttpd daemon with no listening socket, hands it one end of a socketpair carrying
 *      "POST /v1/caption" with that header, and posts the fuzzed body inside the request's handler.
 *      Otherwise the pieces are appended raw (cli_body_append): what is kept must be the body's first
 *      bytes, whole unless the body is over the limit.
 * libmicrohttpd itself is Debian's, not instrumented: the harness's coverage is ours (ASan still sees
 * what the post processor hands our callback). Seeds: fuzz/corpus/serve. Replayed by
 * tests/test_fuzz_regress.c. */
#include "fuzz_main.h"
#include <math.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../src/cli/serve_request.h"
#include "attncap/attncap.h"

/* a NUL-terminated copy of data[0..n), cut at its first NUL */
static char *fuzz_serve_str(const uint8_t *data, size_t n) {
    char *s = malloc(n + 1);
    if (!s) abort();
    memcpy(s, data, n);
    s[n] = 0;
    return s;
}

static void fuzz_serve_media(const uint8_t *data, size_t size) {
    const size_t cap[2] = {128, size ? (size_t)data[0] % 40 + 1 : 1};
    char *v = fuzz_serve_str(data, size);
    for (int c = 0; c < 2; c++) {
        char *out = malloc(cap[c]);
        if (!out) abort();
        cli_media_type(v, out, cap[c]);
        /* the value past its leading spaces, up to ';', ' ' or the end, lower-cased, cut at cap - 1 */
        const char *p = v + strspn(v, " ");
        size_t want = strcspn(p, "; ");
        if (want > cap[c] - 1) want = cap[c] - 1;
        if (strlen(out) != want) abort();
        for (size_t i = 0; i < want; i++)
            if (out[i] != (char)(p[i] >= 'A' && p[i] <= 'Z' ? p[i] - 'A' + 'a' : p[i])) abort();
        if (cli_photo_type(out) && strncmp(out, "image/", 6) && strcmp(out, "application/octet-stream")) abort();
        free(out);
    }
    char none[4] = "xyz";
    cli_media_type(NULL, none, sizeof none);
    if (none[0]) abort();
    free(v);
}

static void fuzz_serve_query(const uint8_t *data, size_t size) {
    const int max_nbest = size ? data[0] % 34 - 1 : 5; /* -1 .. 32: even a server that allows none */
    char *v = fuzz_serve_str(data + (size > 0), size - (size > 0));
    int nb = -7;
    const int rc = cli_query_nbest(v, max_nbest, &nb);
    /* the rule: optional spaces and sign, digits, nothing after; the value in [1, max_nbest] */
    const char *p = v + strspn(v, " \t\n\v\f\r");
    int neg = 0;
    if (*p == '+' || *p == '-') neg = *p++ == '-';
    const size_t digits = strspn(p, "0123456789");
    long long val = 0;
    int big = 0;
    for (size_t i = 0; i < digits; i++) big |= (val = val * 10 + (p[i] - '0')) > 1000, val = val > 1000 ? 1001 : val;
    const int ok = digits > 0 && !p[digits] && !neg && !big && val >= 1 && val <= max_nbest;
    if (ok ? rc != 0 || nb != val : rc != -1) abort();
    if (cli_query_nbest(NULL, max_nbest, &nb) || nb != 1) abort();
    if (cli_query_flag(v) != (strcmp(v, "0") && strcmp(v, "false"))) abort();
    if (cli_query_flag(NULL)) abort();
    /* Content-Length: over max only when strtoull reads a number over it (a '-' wraps: refused as huge) */
    const size_t max = size ? (size_t)data[0] * 1000 : 0;
    const unsigned long long n = strtoull(v, NULL, 10);
    if (cli_body_announced_over(v, max) != (n > max) || cli_body_announced_over(NULL, 0)) abort();
    free(v);
}

static const char *const fuzz_serve_reasons[] = {
    "the body is not JSON", "the body is not a JSON object", "\"candidates\": an array of captions is needed",
    "\"references\": an array of arrays of captions is needed", "\"candidates\": empty",
    "\"references\" and \"candidates\" differ in length", "out of memory", "\"candidates\": each must be a string",
    "\"references\": each must be a non-empty array", "\"references\": each reference must be a string"};

static void fuzz_serve_evaluate(const uint8_t *data, size_t size) {
    cli_eval_body e;
    const char *bad = cli_eval_body_parse(data, size, &e);
    if (bad) {
        int known = 0;
        for (size_t i = 0; i < sizeof fuzz_serve_reasons / sizeof *fuzz_serve_reasons; i++)
            known |= !strcmp(bad, fuzz_serve_reasons[i]);
        if (!known || e.json || e.cand || e.ref || e.nref || e.n) abort();
        return;
    }
    if (e.n < 1 || !e.json || !e.cand || !e.ref || !e.nref) abort();
    for (int i = 0; i < e.n; i++) {
        if (!e.cand[i] || e.nref[i] < 1 || !e.ref[i]) abort();
        for (int k = 0; k < e.nref[i]; k++)
            if (!e.ref[i][k]) abort();
    }
    ac_metrics m;
    ac_err err = {{0}, 0};
    if (ac_evaluate(e.n, e.cand, (const char *const *const *)e.ref, e.nref, AC_EVAL_NO_METEOR, &m, &err) < 0) {
        if (!err.msg[0] || strchr(err.msg, '\n')) abort(); /* the server answers it in one line */
    } else {
        if (m.n != e.n || !isnan(m.meteor) || !(m.rouge_l >= 0 && m.rouge_l <= 1) || !(m.cider_d >= 0 && m.cider_d <= 10.0001))
            abort();
        for (int k = 0; k < 4; k++)
            if (!(m.bleu[k] >= 0 && m.bleu[k] <= 1)) abort();
    }
    cli_eval_body_free(&e);
    if (e.json || e.cand || e.n) abort();
}

/* ---- case 3: a body, raw or through libmicrohttpd's post processor ---- */

static struct {
    const uint8_t *body;
    size_t size, piece;
    cli_body b;
    int handled, refused, pp_null;
} fuzz_serve_post;

static enum MHD_Result fuzz_serve_handler(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                                         const char *version, const char *upload_data, size_t *upload_data_size,
                                         void **con_cls) {
    (void)cls, (void)url, (void)method, (void)version, (void)upload_data, (void)con_cls;
    if (fuzz_serve_post.handled) return *upload_data_size = 0, MHD_NO;
    fuzz_serve_post.handled = 1;
    /* as serve_http.c's begin() and handle(): a post processor over the headers, the body in pieces */
    struct MHD_PostProcessor *pp = MHD_create_post_processor(conn, 65536, cli_post_field, &fuzz_serve_post.b);
    if (!pp) return fuzz_serve_post.pp_null = 1, MHD_NO;
    for (size_t at = 0; at < fuzz_serve_post.size && !fuzz_serve_post.refused; at += fuzz_serve_post.piece) {
        size_t k = fuzz_serve_post.size - at < fuzz_serve_post.piece ? fuzz_serve_post.size - at : fuzz_serve_post.piece;
        if (MHD_post_process(pp, (const char *)fuzz_serve_post.body + at, k) != MHD_YES) fuzz_serve_post.refused = 1;
    }
    MHD_destroy_post_processor(pp);
    return MHD_NO; /* closes the connection: no answer needed */
}

static void fuzz_serve_multipart(const char *type) {
    static struct MHD_Daemon *d;
    if (!d && !(d = MHD_start_daemon(MHD_USE_NO_LISTEN_SOCKET, 0, NULL, NULL, fuzz_serve_handler, NULL, MHD_OPTION_END)))
        abort();
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) abort();
    char head[1024];
    const int n = snprintf(head, sizeof head,
                           "POST /v1/caption HTTP/1.1\r\nHost: x\r\nContent-Type: %s\r\nContent-Length: 0\r\n\r\n", type);
    if (n < 0 || (size_t)n >= sizeof head || write(sv[1], head, (size_t)n) != n) abort();
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET, a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (MHD_add_connection(d, sv[0], (const struct sockaddr *)&a, sizeof a) != MHD_YES) abort();
    for (int i = 0; i < 20 && !fuzz_serve_post.handled; i++) MHD_run(d);
    close(sv[1]);
    for (int i = 0; i < 4; i++) MHD_run(d); /* the daemon closes sv[0] */
    if (!fuzz_serve_post.handled) abort(); /* a header line libmicrohttpd took as a whole request */
}

static void fuzz_serve_body(const uint8_t *data, size_t size) {
    if (size < 2) return;
    const size_t max = (size_t)data[0] * 16, piece = (size_t)data[1] % 64 + 1;
    data += 2, size -= 2;
    const uint8_t *nl = memchr(data, '\n', size);
    const size_t tlen = nl ? (size_t)(nl - data) : 0;
    char *type = fuzz_serve_str(data, tlen);
    for (char *c = type; *c; c++)
        if (*c == '\r' || *c == 0x7f || (unsigned char)*c < 0x20) *c = ' '; /* one header line */
    if (strlen(type) > 900) type[900] = 0;
    memset(&fuzz_serve_post, 0, sizeof fuzz_serve_post);
    fuzz_serve_post.body = nl ? nl + 1 : data, fuzz_serve_post.size = nl ? size - tlen - 1 : size;
    fuzz_serve_post.piece = piece, fuzz_serve_post.b.max = max;
    char t[128];
    cli_media_type(type, t, sizeof t);
    cli_body *b = &fuzz_serve_post.b;
    if (!strcmp(t, "multipart/form-data")) {
        fuzz_serve_multipart(type);
        if (b->n > max || (b->n && !b->data) || b->n > fuzz_serve_post.size) abort();
        if (b->too_big && !fuzz_serve_post.refused) abort();
    } else {
        for (size_t at = 0; at < fuzz_serve_post.size; at += piece) {
            size_t k = fuzz_serve_post.size - at < piece ? fuzz_serve_post.size - at : piece;
            if (cli_body_append(b, (const char *)fuzz_serve_post.body + at, k) < 0) break;
        }
        /* all of it within the limit, or too_big and only whole pieces of its start */
        if (fuzz_serve_post.size <= max ? b->too_big || b->n != fuzz_serve_post.size : !b->too_big || b->n > max || b->n % piece)
            abort();
        if (b->n && memcmp(b->data, fuzz_serve_post.body, b->n)) abort();
    }
    cli_body_free(b);
    if (b->data || b->n || b->cap || b->max != max) abort();
    free(type);
}

static int fuzz_serve(const uint8_t *data, size_t size) {
    if (!size) return 0;
    switch (data[0] % 4) {
    case 0: fuzz_serve_media(data + 1, size - 1); break;
    case 1: fuzz_serve_query(data + 1, size - 1); break;
    case 2: fuzz_serve_evaluate(data + 1, size - 1); break;
    default: fuzz_serve_body(data + 1, size - 1); break;
    }
    return 0;
}

AC_FUZZ_MAIN(fuzz_serve, "", "")
