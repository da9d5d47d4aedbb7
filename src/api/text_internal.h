/* text_internal.h: a string grown by printf-style appends, for what the core returns as text (the
 * evaluator's scores, a file's description). Private to src/api/. */
#ifndef ATTNCAP_TEXT_INTERNAL_H
#define ATTNCAP_TEXT_INTERNAL_H
#include <stddef.h>

typedef struct ac_text {
    char *s; /* NUL-terminated; NULL once an append failed (out of memory), and it stays so */
    size_t len, cap;
} ac_text;

/* An empty text (s NULL when out of memory). */
ac_text ac_text_new(void);
void ac_text_add(ac_text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#endif
