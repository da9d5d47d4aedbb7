/* options.c: see options_internal.h. */
#include "options_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/common.h"
#include "alloc_internal.h"

const char *ac_option_key(const option *table, int n, int i, int *is_switch) {
    if (i < 0 || i >= n) return NULL;
    if (is_switch) *is_switch = table[i].kind == OPTION_SWITCH;
    return table[i].key;
}

int ac_option_find(const option *table, int n, const char *key) {
    char k[64];
    const size_t len = key ? strlen(key) : 0;
    if (!len || len >= sizeof k) return -1;
    for (size_t i = 0; i <= len; i++) k[i] = key[i] == '-' ? '_' : key[i];
    for (int i = 0; i < n; i++)
        if (!strcmp(table[i].key, k)) return i;
    return -1;
}

int ac_option_set(const option *o, void *base, char **owned, const char *text, ac_err *err) {
    char *field = (char *)base + o->off;
    if (o->kind == OPTION_TEXT) {
        if (!text) return ac_errc(err, AC_ERR_OPTIONS, "option '%s' wants a value", o->key);
        char *copy = ac_strdup(text);
        if (!copy) return ac_errf(err, "out of memory");
        free(*owned);
        *owned = copy;
        *(const char **)(void *)field = copy;
        return 0;
    }
    if (!text) text = "1";
    char *end;
    errno = 0;
    const double v = strtod(text, &end);
    const int whole = o->kind != OPTION_FLOAT;
    if (!*text || *end || errno || !isfinite(v) || (whole && v != floor(v)))
        return ac_errc(err, AC_ERR_OPTIONS, "option '%s' wants %s, got '%.80s'", o->key,
                       o->kind == OPTION_SWITCH ? "1 or 0" : whole ? "a whole number" : "a number", text);
    if (!(v >= o->lo && v <= o->hi))
        return ac_errc(err, AC_ERR_OPTIONS, "option '%s' wants a value in %.15g..%.15g, got '%.80s'", o->key, o->lo,
                       o->hi, text);
    if (o->kind == OPTION_U64) *(unsigned long long *)(void *)field = (unsigned long long)v;
    else if (o->kind == OPTION_FLOAT) *(float *)(void *)field = (float)v;
    else *(int *)(void *)field = (int)v;
    return 0;
}

const char *ac_option_get(const option *o, const void *base, char *buf, size_t n) {
    const char *field = (const char *)base + o->off;
    switch (o->kind) {
    case OPTION_TEXT: {
        const char *s = *(const char *const *)(const void *)field;
        return s ? s : "";
    }
    case OPTION_INT:
    case OPTION_SWITCH: snprintf(buf, n, "%d", *(const int *)(const void *)field); break;
    case OPTION_U64: snprintf(buf, n, "%llu", *(const unsigned long long *)(const void *)field); break;
    case OPTION_FLOAT: { /* the shortest text that reads back as the same float (4e-4: "0.0004") */
        const float v = *(const float *)(const void *)field;
        for (int digits = 6; digits <= 9; digits++) {
            snprintf(buf, n, "%.*g", digits, v);
            if (strtof(buf, NULL) == v) break;
        }
        break;
    }
    }
    return buf;
}

int ac_option_check_precision(const char *value, ac_err *err) {
    ac_err why;
    if (ac_captioner_set_precision(NULL, value, &why) == 0) return 0;
    return ac_errc(err, AC_ERR_OPTIONS, "option 'precision' is not one: %s", why.msg);
}
