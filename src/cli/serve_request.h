/* attncap serve's reading of what a client sends (serve_request.c), apart from any connection so that
 * fuzz/fuzz_serve.c can drive it: the Content-Type's media type, the accepted photo types, the
 * Content-Length check, the query parameters, a request body growing under its limit (raw, or the
 * multipart field "photo" through libmicrohttpd's post processor) and POST /v1/evaluate's JSON body.
 * Nothing here prints or answers; serve_http.c words and sends the answers. */
#ifndef ATTNCAP_CLI_SERVE_REQUEST_H
#define ATTNCAP_CLI_SERVE_REQUEST_H
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <microhttpd.h>

/* The media type of a Content-Type value v (NULL: none) without its parameters or surrounding spaces,
 * lower-cased, into out (always terminated; cut at cap - 1 bytes). "" when there is none. */
void cli_media_type(const char *v, char *out, size_t cap);
/* 1 when media type t is one POST /v1/caption takes as a raw photo body. */
int cli_photo_type(const char *t);
/* 1 when a Content-Length value (NULL: none) announces more than max bytes (unparsable: 0, as strtoull). */
int cli_body_announced_over(const char *content_length, size_t max);
/* The nbest query parameter (NULL: absent, 1): 0 and *out in [1, max_nbest], or -1 when it is not a
 * whole number in that range. */
int cli_query_nbest(const char *v, int max_nbest, int *out);
/* The attention query parameter: 1 when present and neither "0" nor "false". */
int cli_query_flag(const char *v);

/* A request body read in pieces, never past max bytes. */
typedef struct cli_body {
    unsigned char *data; /* malloc'ed; NULL until the first byte */
    size_t n, cap, max;
    int too_big;         /* set when a piece would have passed max (then the piece is dropped) */
} cli_body;
/* Appends size bytes: 0, or -1 (too_big set, or out of memory). */
int cli_body_append(cli_body *b, const char *data, size_t size);
void cli_body_free(cli_body *b); /* frees data and empties it; max kept */
/* libmicrohttpd's MHD_PostDataIterator for multipart/form-data (cls: a cli_body): the bytes of field
 * "photo" are appended, the other fields dropped; MHD_NO when the body passes its limit. */
enum MHD_Result cli_post_field(void *cls, enum MHD_ValueKind kind, const char *key, const char *filename,
                               const char *content_type, const char *transfer_encoding, const char *data, uint64_t off,
                               size_t size);

/* POST /v1/evaluate's body {"references": [["ref", ...], ...], "candidates": ["caption", ...],
 * "meteor": bool}, validated into the arrays ac_evaluate takes (pointing into the parsed JSON). */
typedef struct cli_eval_body {
    void *json;          /* the parsed document (a cJSON *) */
    int n;               /* candidates, >= 1 */
    const char **cand;   /* [n] */
    const char ***ref;   /* [n][nref[i]] */
    int *nref;           /* [n], each >= 1 */
    int no_meteor;       /* "meteor": false */
} cli_eval_body;
/* NULL when body[0..n) is such a request (e filled; cli_eval_body_free it), else the one-line reason,
 * a static string ("out of memory" is the server's fault, the rest the client's) and e empty. */
const char *cli_eval_body_parse(const unsigned char *body, size_t n, cli_eval_body *e);
void cli_eval_body_free(cli_eval_body *e);

#endif
