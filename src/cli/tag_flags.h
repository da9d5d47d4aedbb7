/* tag_flags.h: the naming flags that caption and eval share: --tags (and caption's --tag-table).
 *
 * The naming's numeric settings are the model's ("naming" metadata, naming_opts.h), not flags: a
 * maintainer records them with `attncap tune --naming JSON`, or tries some without writing the model
 * through the environment variable ATTNCAP_NAMING (a JSON object of the same keys, checked as the
 * model's record is), which the CLI lays over the model's record. The flags that set them once are
 * refused with one line saying so and what to use instead (CLI_NAMING_REMOVED). */
#ifndef ATTNCAP_CLI_TAG_FLAGS_H
#define ATTNCAP_CLI_TAG_FLAGS_H
#include "attncap/attncap.h"
#include "options.h"

typedef struct cli_tag_flags {
    const char *tags;  /* "auto", "off", or words (where allowed); NULL: the model's setting */
    const char *table; /* --tag-table; NULL: beside the model */
} cli_tag_flags;
#define CLI_TAG_FLAGS_INIT {NULL, NULL}

/* A removed flag that set the naming's setting KEY (a key of the model's "naming" record). */
#define CLI_NAMING_REMOVED(flag, key)                                                                          \
    OPT_REMOVED(flag, "the model's \"naming\" record sets " key " (--tags chooses whether to name; " \
                      "maintainers: attncap tune --naming '{\"" key "\":X}' records it, ATTNCAP_NAMING='{\"" key "\":X}' tries it)")

/* The option-table entries of the flags every naming command takes, and of the flags they once took. */
#define CLI_TAG_OPTS(f) OPT_STR("--tags", &(f).tags), CLI_NAMING_REMOVED_OPTS
/* The removed ones alone (eval's --tags is its evaluator's option "tags"). */
#define CLI_NAMING_REMOVED_OPTS                                                                                     \
    CLI_NAMING_REMOVED("--tag-threshold", "threshold"),                                                            \
        CLI_NAMING_REMOVED("--tag-max-drop", "max_drop"), CLI_NAMING_REMOVED("--tag-absent", "absent"),            \
        CLI_NAMING_REMOVED("--tag-absent-object", "absent_object"),                                                 \
        CLI_NAMING_REMOVED("--tag-trust-logprob", "trust_logprob"), CLI_NAMING_REMOVED("--tag-trust-seen", "trust_seen"), \
        CLI_NAMING_REMOVED("--tag-rare-max-drop", "rare_max_drop"),                                                 \
        CLI_NAMING_REMOVED("--tag-objects-only", "tag_objects_only"),                                               \
        CLI_NAMING_REMOVED("--tag-min-precision", "tag_min_precision"),                                             \
        CLI_NAMING_REMOVED("--presence-absent", "presence_absent"), CLI_NAMING_REMOVED("--presence-ratio", "presence_ratio")

/* The model's naming setting, ATTNCAP_NAMING's fields laid over it (a note on stderr unless quiet), then
 * --tags's mode, set on cap with --tag-table. words: whether --tags may list words to require (caption)
 * or only auto/off (eval). A problem: -1 with err "--tags: ..." or "ATTNCAP_NAMING: ...". */
int cli_tag_flags_apply(ac_captioner *cap, const cli_tag_flags *f, const char *cmd, int words, int quiet, ac_err *err);
#endif
