/* tag_flags.c: see tag_flags.h. */
#include "tag_flags.h"

#include <stdio.h>
#include <string.h>

#include "attncap/locate.h"

int cli_tag_flags_apply(ac_captioner *cap, const cli_tag_flags *f, const char *cmd, int words, int quiet, ac_err *err) {
    ac_naming_opts no = ac_naming_opts_for_model(&cap->model);
    const char *env = ac_env("ATTNCAP_NAMING");
    if (env) {
        if (ac_naming_apply_json(&no, env, err)) {
            ac_err_prefix(err, "ATTNCAP_NAMING");
            return -1;
        }
        if (!quiet) fprintf(stderr, "attncap %s: note: naming settings from ATTNCAP_NAMING over the model's: %.200s\n", cmd, env);
    }
    if (f->tags && !strcmp(f->tags, "auto")) no.mode = AC_TAGS_AUTO;
    else if (f->tags && !strcmp(f->tags, "off")) no.mode = AC_TAGS_OFF;
    else if (f->tags && !words) return ac_errf(err, "--tags must be auto or off, not '%s'", f->tags);
    else if (f->tags) no.mode = AC_TAGS_GIVEN, no.words = f->tags;
    if (ac_captioner_set_naming(cap, &no, f->table, err)) {
        ac_err_prefix(err, "--tags");
        return -1;
    }
    return 0;
}
