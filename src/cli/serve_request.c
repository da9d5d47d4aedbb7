/* attncap serve's reading of what a client sends, apart from any connection (serve_request.h). */
#include "serve_request.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

void cli_media_type(const char *v, char *out, size_t cap) {
    size_t k = 0;
    while (v && *v == ' ') v++;
    for (; v && *v && *v != ';' && *v != ' ' && k + 1 < cap; v++) out[k++] = (char)(*v >= 'A' && *v <= 'Z' ? *v + 32 : *v);
    out[k] = 0;
}

int cli_photo_type(const char *t) {
    static const char *const ok[] = {"image/jpeg", "image/jpg", "image/png", "image/webp", "image/tiff",
                                     "image/bmp", "image/gif", "application/octet-stream"};
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++)
        if (!strcmp(t, ok[i])) return 1;
    return 0;
}

int cli_body_announced_over(const char *content_length, size_t max) {
    return content_length && strtoull(content_length, NULL, 10) > max;
}

int cli_query_nbest(const char *v, int max_nbest, int *out) {
    *out = 1;
    if (!v) return 0;
    char *end;
    long x = strtol(v, &end, 10);
    if (*end || x < 1 || x > max_nbest) return -1;
    *out = (int)x;
    return 0;
}

int cli_query_flag(const char *v) { return v && strcmp(v, "0") && strcmp(v, "false"); }

int cli_body_append(cli_body *b, const char *data, size_t size) {
    if (size > b->max - b->n) { /* n <= max always */
        b->too_big = 1;
        return -1;
    }
    if (!size) return 0;
    if (b->n + size > b->cap) {
        size_t cap = b->cap ? b->cap : 65536;
        while (cap < b->n + size) cap *= 2;
        if (cap > b->max) cap = b->max;
        unsigned char *d = realloc(b->data, cap);
        if (!d) return -1;
        b->data = d, b->cap = cap;
    }
    memcpy(b->data + b->n, data, size);
    b->n += size;
    return 0;
}

void cli_body_free(cli_body *b) {
    free(b->data);
    b->data = NULL, b->n = b->cap = 0;
}

enum MHD_Result cli_post_field(void *cls, enum MHD_ValueKind kind, const char *key, const char *filename,
                               const char *content_type, const char *transfer_encoding, const char *data, uint64_t off,
                               size_t size) {
    (void)kind, (void)filename, (void)content_type, (void)transfer_encoding, (void)off;
    if (!key || strcmp(key, "photo") != 0 || !size) return MHD_YES;
    return cli_body_append(cls, data, size) == 0 ? MHD_YES : MHD_NO;
}

const char *cli_eval_body_parse(const unsigned char *body, size_t len, cli_eval_body *e) {
    memset(e, 0, sizeof *e);
    cJSON *o = cJSON_ParseWithLength((const char *)body, len);
    if (!o) return "the body is not JSON";
    const cJSON *refs = cJSON_GetObjectItem(o, "references"), *cands = cJSON_GetObjectItem(o, "candidates");
    const int n = cJSON_GetArraySize(cands);
    const char *bad = !cJSON_IsObject(o)       ? "the body is not a JSON object"
                      : !cJSON_IsArray(cands)  ? "\"candidates\": an array of captions is needed"
                      : !cJSON_IsArray(refs)   ? "\"references\": an array of arrays of captions is needed"
                      : n < 1                  ? "\"candidates\": empty"
                      : cJSON_GetArraySize(refs) != n ? "\"references\" and \"candidates\" differ in length"
                                                      : NULL;
    e->json = o;
    e->n = bad ? 0 : n;
    if (bad) return cli_eval_body_free(e), bad;
    e->cand = calloc((size_t)n, sizeof *e->cand);
    e->ref = calloc((size_t)n, sizeof *e->ref);
    e->nref = calloc((size_t)n, sizeof *e->nref);
    if (!e->cand || !e->ref || !e->nref) bad = "out of memory";
    /* walked as linked lists: cJSON_GetArrayItem(i) would be quadratic in a long array */
    const cJSON *c = cands->child, *rl = refs->child;
    for (int i = 0; !bad && i < n; i++, c = c->next, rl = rl->next) {
        const int k_n = cJSON_GetArraySize(rl);
        if (!cJSON_IsString(c)) bad = "\"candidates\": each must be a string";
        else if (!cJSON_IsArray(rl) || k_n < 1) bad = "\"references\": each must be a non-empty array";
        else if (!(e->ref[i] = calloc((size_t)k_n, sizeof **e->ref))) bad = "out of memory";
        if (!bad) e->cand[i] = c->valuestring;
        for (const cJSON *x = bad ? NULL : rl->child; x && !bad; x = x->next) {
            if (!cJSON_IsString(x)) bad = "\"references\": each reference must be a string";
            else e->ref[i][e->nref[i]++] = x->valuestring;
        }
    }
    e->no_meteor = cJSON_IsFalse(cJSON_GetObjectItem(o, "meteor"));
    if (bad) cli_eval_body_free(e);
    return bad;
}

void cli_eval_body_free(cli_eval_body *e) {
    for (int i = 0; e->ref && i < e->n; i++) free(e->ref[i]);
    free(e->ref), free(e->cand), free(e->nref);
    cJSON_Delete(e->json);
    memset(e, 0, sizeof *e);
}
