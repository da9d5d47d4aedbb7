/* tag_flags.c: see tag_flags.h. Over the core API: the naming record and the tags are the captioner's
 * setters (ac_captioner_set_naming_record, ac_captioner_set_tags). */
#include "tag_flags.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* err's message as "PREFIX: message". */
static int prefixed(ac_err *err, const char *prefix) {
    char old[sizeof err->msg];
    memcpy(old, err->msg, sizeof old);
    const int n = snprintf(err->msg, sizeof err->msg, "%s: ", prefix);
    if (n > 0 && (size_t)n < sizeof err->msg)
        snprintf(err->msg + n, sizeof err->msg - (size_t)n, "%.*s", (int)(sizeof err->msg - (size_t)n - 1), old);
    return -1;
}

int cli_tag_flags_apply(ac_captioner *cap, const cli_tag_flags *f, const char *cmd, int words, int quiet, ac_err *err) {
    const char *env = getenv("ATTNCAP_NAMING");
    if (env && *env) {
        /* the record first: with the tags' mode still the opened captioner's, so ac_captioner_set_tags
         * below loads what the record's settings need (the presence head) and checks it */
        if (ac_captioner_set_naming_record(cap, env, err)) return prefixed(err, "ATTNCAP_NAMING");
        if (!quiet) fprintf(stderr, "attncap %s: note: naming settings from ATTNCAP_NAMING over the model's: %.200s\n", cmd, env);
    }
    if (f->tags && !words && strcmp(f->tags, "auto") && strcmp(f->tags, "off")) {
        snprintf(err->msg, sizeof err->msg, "--tags must be auto or off, not '%s'", f->tags);
        err->code = AC_ERR_FAILED;
        return -1;
    }
    if (ac_captioner_set_tags(cap, f->tags, f->table, err)) return prefixed(err, "--tags");
    return 0;
}
