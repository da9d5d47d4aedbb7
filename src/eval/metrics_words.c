/* metrics_words.c: a candidate or reference as word ids (metrics_internal.h), the one thing BLEU,
 * CIDEr-D and the metrics driver share; a file of its own so none of them depends on another. */
#include <stdlib.h>
#include <string.h>

#include "metrics_internal.h"
#include "alloc_internal.h"

int *ac_metric_words(ac_strmap *m, const char *s, int *len) {
    int n = 0, cap = 16;
    int *out = ac_malloc((size_t)cap * sizeof *out);
    if (!out) return NULL;
    char buf[256];
    const char *p = s;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == '\v' || *p == '\f') p++;
        if (!*p) break;
        const char *st = p;
        while (*p && !(*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == '\v' || *p == '\f')) p++;
        size_t l = (size_t)(p - st);
        char *w = l < sizeof buf ? buf : ac_malloc(l + 1);
        if (!w) { free(out); return NULL; }
        memcpy(w, st, l);
        w[l] = 0;
        int id = ac_strmap_put(m, w, (int)m->n);
        if (w != buf) free(w);
        if (id < 0) { free(out); return NULL; }
        if (n == cap) {
            cap *= 2;
            int *no = ac_realloc(out, (size_t)cap * sizeof *no);
            if (!no) { free(out); return NULL; }
            out = no;
        }
        out[n++] = id;
    }
    *len = n;
    return out;
}
