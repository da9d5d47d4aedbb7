/* strmap.c: string -> int hash map (see strmap.h). */
#include "strmap.h"
#include "alloc_internal.h"

#include <stdlib.h>
#include <string.h>

uint64_t ac_hash_bytes(const void *p, size_t n) {
    const unsigned char *s = p;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 1099511628211ull;
    return h;
}

static size_t slot(const ac_strmap *m, const char *key) {
    size_t i = (size_t)ac_hash_bytes(key, strlen(key)) & (m->cap - 1);
    while (m->keys[i] && strcmp(m->keys[i], key)) i = (i + 1) & (m->cap - 1);
    return i;
}

int ac_strmap_get(const ac_strmap *m, const char *key) {
    if (!m->cap) return -1;
    size_t i = slot(m, key);
    return m->keys[i] ? m->vals[i] : -1;
}

static int grow(ac_strmap *m) {
    size_t ncap = m->cap ? m->cap * 2 : 64;
    char **ok = m->keys;
    int *ov = m->vals;
    size_t ocap = m->cap;
    m->keys = ac_calloc(ncap, sizeof *m->keys);
    m->vals = ac_malloc(ncap * sizeof *m->vals);
    if (!m->keys || !m->vals) {
        free(m->keys);
        free(m->vals);
        m->keys = ok, m->vals = ov;
        return -1;
    }
    m->cap = ncap;
    for (size_t i = 0; i < ocap; i++)
        if (ok[i]) {
            size_t j = slot(m, ok[i]);
            m->keys[j] = ok[i];
            m->vals[j] = ov[i];
        }
    free(ok);
    free(ov);
    return 0;
}

int ac_strmap_put(ac_strmap *m, const char *key, int val) {
    if ((m->n + 1) * 2 > m->cap && grow(m)) return -2;
    size_t i = slot(m, key);
    if (m->keys[i]) return m->vals[i];
    m->keys[i] = ac_strdup(key);
    if (!m->keys[i]) return -2;
    m->vals[i] = val;
    m->n++;
    return val;
}

void ac_strmap_free(ac_strmap *m) {
    for (size_t i = 0; i < m->cap; i++) free(m->keys[i]);
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}
