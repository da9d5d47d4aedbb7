/* text.c: see text_internal.h. */
#include "text_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "alloc_internal.h"

ac_text ac_text_new(void) {
    ac_text t = {ac_malloc(1024), 0, 1024};
    if (t.s) t.s[0] = 0;
    return t;
}

void ac_text_add(ac_text *t, const char *fmt, ...) {
    if (!t->s) return;
    va_list ap;
    va_start(ap, fmt);
    const int n = vsnprintf(t->s + t->len, t->cap - t->len, fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n >= t->cap - t->len) { /* grow, then write it again */
        const size_t cap = (t->len + (size_t)n + 1) * 2;
        char *s = ac_realloc(t->s, cap);
        if (!s) {
            free(t->s), t->s = NULL;
            return;
        }
        t->s = s, t->cap = cap;
        va_start(ap, fmt);
        vsnprintf(t->s + t->len, t->cap - t->len, fmt, ap);
        va_end(ap);
    }
    if (n < 0) free(t->s), t->s = NULL;
    else t->len += (size_t)n;
}
