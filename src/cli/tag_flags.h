/* tag_flags.h: the naming flags that caption and eval share (--tags, --tag-threshold, ...). */
#ifndef ATTNCAP_CLI_TAG_FLAGS_H
#define ATTNCAP_CLI_TAG_FLAGS_H
#include "attncap/captioner.h"

typedef struct cli_tag_flags {
    const char *tags;  /* "auto", "off", or words (where allowed); NULL: the model's setting */
    const char *table; /* --tag-table; NULL: beside the model */
    float threshold, max_drop, absent, min_confidence, trust_logprob, presence_absent, presence_ratio, trust_seen,
        rare_max_drop, objects_only, min_precision, absent_object; /* < 0 (trust_logprob: > 0): the model's */
} cli_tag_flags;
#define CLI_TAG_FLAGS_INIT {NULL, NULL, -1, -1, -1, -1, 1, -1, -1, -1, -1, -1, -1, -1}

/* The option-table entries of the flags every naming command takes. */
#define CLI_TAG_OPTS(f)                                                                                             \
    OPT_STR("--tags", &(f).tags), OPT_FLOAT("--tag-threshold", &(f).threshold, 0, 1),                              \
        OPT_FLOAT("--tag-max-drop", &(f).max_drop, 0, 100), OPT_FLOAT("--tag-absent", &(f).absent, 0, 1), \
        OPT_FLOAT("--tag-trust-logprob", &(f).trust_logprob, -100, 0), OPT_FLOAT("--presence-absent", &(f).presence_absent, 0, 1), \
        OPT_FLOAT("--presence-ratio", &(f).presence_ratio, 0, 100),                                                \
        OPT_FLOAT("--tag-trust-seen", &(f).trust_seen, 0, 1e9), OPT_FLOAT("--tag-rare-max-drop", &(f).rare_max_drop, 0, 100), \
        OPT_FLOAT("--tag-objects-only", &(f).objects_only, 0, 1), OPT_FLOAT("--tag-min-precision", &(f).min_precision, 0, 1), \
        OPT_FLOAT("--tag-absent-object", &(f).absent_object, 0, 1)

/* The model's naming setting with the flags in its place, set on cap. words: whether --tags may list
 * words to require (caption) or only auto/off (eval). */
int cli_tag_flags_apply(ac_captioner *cap, const cli_tag_flags *f, int words, ac_err *err);
#endif
