/* options_internal.h: options set by key from text, for the core's jobs (the trainer, the featurizer):
 * a table of each option's key, kind, place and range; set checks the text against them, get shows the
 * value as text. Private to src/api/. */
#ifndef ATTNCAP_OPTIONS_INTERNAL_H
#define ATTNCAP_OPTIONS_INTERNAL_H
#include <stddef.h>

#include "attncap/attncap.h"

typedef enum { OPTION_TEXT, OPTION_INT, OPTION_FLOAT, OPTION_U64, OPTION_SWITCH } option_kind;

/* An option: its value at `off` bytes into the job's struct (const char *, int, float, unsigned long
 * long, int 0/1); numbers in lo..hi. */
typedef struct option {
    const char *key;
    option_kind kind;
    size_t off;
    double lo, hi;
} option;

/* The i-th option's key (NULL outside 0..n-1) and whether it is a switch: a job's ..._option. */
const char *ac_option_key(const option *table, int n, int i, int *is_switch);
/* The index of key in table [n] ('-' read as '_'), or -1. */
int ac_option_find(const option *table, int n, const char *key);
/* Sets option o of the job at base from text (a switch: NULL means "1"); a text option's copy goes to
 * *owned (the previous one freed). Refused with AC_ERR_OPTIONS naming the key and the text. */
int ac_option_set(const option *o, void *base, char **owned, const char *text, ac_err *err);
/* A "precision" option's value checked when it is set (a bad name is the caller's mistake, said before
 * anything is opened): 0, or -1 with AC_ERR_OPTIONS naming the option and why. */
int ac_option_check_precision(const char *value, ac_err *err);
/* Option o's value as text: a text option's own string ("" when unset), else written to buf [n]. */
const char *ac_option_get(const option *o, const void *base, char *buf, size_t n);
#endif
