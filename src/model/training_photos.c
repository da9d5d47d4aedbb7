/* training_photos.c: which photos a model was trained on, by file name (model.h, metadata
 * "training_photos"). */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/model.h"
#include "attncap/safetensors.h"
#include "strmap.h"
#include "alloc_internal.h"
#include "model_internal.h"

#define HASH_NAME "fnv1a64-low32 of the file name"

static uint32_t name_hash(const char *path) {
    const char *slash = strrchr(path, '/');
    const char *name = slash ? slash + 1 : path;
    return (uint32_t)ac_hash_bytes(name, strlen(name));
}

static int cmp_u32(const void *a, const void *b) {
    const uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

char *ac_training_photos_json(const char *const *names, int n) {
    uint32_t *h = ac_malloc(sizeof *h * ((size_t)n + 1));
    char *hex = h ? ac_malloc((size_t)n * 8 + 1) : NULL;
    if (!hex) return free(h), NULL;
    for (int i = 0; i < n; i++) h[i] = name_hash(names[i]);
    qsort(h, (size_t)n, sizeof *h, cmp_u32);
    int u = 0;
    for (int i = 0; i < n; i++)
        if (!u || h[i] != h[u - 1]) h[u++] = h[i];
    for (int i = 0; i < u; i++) snprintf(hex + 8 * i, 9, "%08x", (unsigned)h[i]);
    hex[8 * u] = 0;
    const size_t len = 8 * (size_t)u + 128;
    char *s = ac_malloc(len);
    if (s) snprintf(s, len, "{\"hash\":\"" HASH_NAME "\",\"n\":%d,\"hashes\":\"%s\"}", u, hex);
    free(h), free(hex);
    return s;
}

static int is_hex8(const char *s) {
    for (int i = 0; i < 8; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f') || (s[i] >= 'A' && s[i] <= 'F'))) return 0;
    return 1;
}

int ac_training_photos_parse(const char *json, const char *path, uint32_t **hashes, int *n, ac_err *err) {
    if (hashes) *hashes = NULL;
    *n = 0;
    cJSON *j = cJSON_Parse(json);
    const cJSON *hn = cJSON_GetObjectItemCaseSensitive(j, "hash"), *hs = cJSON_GetObjectItemCaseSensitive(j, "hashes");
    const cJSON *cnt = cJSON_GetObjectItemCaseSensitive(j, "n");
    const size_t len = cJSON_IsString(hs) ? strlen(hs->valuestring) : 0;
    int rc = 0;
    if (!cJSON_IsObject(j) || !cJSON_IsString(hn) || strcmp(hn->valuestring, HASH_NAME) || !cJSON_IsString(hs) ||
        len % 8 || len / 8 > INT32_MAX)
        rc = ac_errf(err, "%s: metadata 'training_photos' is not a record of hashed file names", path);
    const int m = (int)(len / 8);
    for (const cJSON *x = rc ? NULL : j->child; x && !rc; x = x->next)
        if (strcmp(x->string, "hash") && strcmp(x->string, "hashes") && strcmp(x->string, "n"))
            rc = ac_errf(err, "%s: metadata 'training_photos': unknown key '%.80s'", path, x->string);
    if (!rc && cnt && !(cJSON_IsNumber(cnt) && cnt->valuedouble == m))
        rc = ac_errf(err, "%s: metadata 'training_photos': n is not the %d hashes it holds", path, m);
    uint32_t *h = rc ? NULL : ac_malloc(sizeof *h * ((size_t)m + 1));
    if (!rc && !h) rc = ac_errf(err, "%s: out of memory", path);
    for (int i = 0; !rc && i < m; i++) {
        const char *digits = hs->valuestring + 8 * (size_t)i;
        char hex[9];
        memcpy(hex, digits, 8), hex[8] = 0;
        if (is_hex8(digits)) h[i] = (uint32_t)strtoul(hex, NULL, 16);
        if (!is_hex8(digits) || (i && h[i] <= h[i - 1]))
            rc = ac_errf(err, "%s: metadata 'training_photos': hash %d is not hex, or out of order", path, i);
    }
    cJSON_Delete(j);
    if (rc || !hashes) free(h);
    else *hashes = h;
    if (!rc) *n = m;
    return rc;
}

int ac_model_training_photos_hits(const char *path, const char *const *names, int n, int *hits, int *n_trained,
                                  ac_err *err) {
    *hits = *n_trained = -1;
    ac_st_file f;
    if (ac_st_read_header(path, &f, err)) return -1;
    const char *rec = ac_st_meta(&f, "training_photos");
    uint32_t *h = NULL;
    int m = 0, rc = rec ? ac_training_photos_parse(rec, path, &h, &m, err) : 0;
    if (rec && !rc) {
        *n_trained = m, *hits = 0;
        for (int i = 0; i < n; i++) {
            const uint32_t x = name_hash(names[i]);
            *hits += bsearch(&x, h, (size_t)m, sizeof *h, cmp_u32) != NULL;
        }
    }
    free(h);
    ac_st_free(&f);
    return rc;
}
