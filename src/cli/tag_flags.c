/* tag_flags.c: see tag_flags.h. */
#include "tag_flags.h"

#include <string.h>

int cli_tag_flags_apply(ac_captioner *cap, const cli_tag_flags *f, int words, ac_err *err) {
    ac_naming_opts no = ac_naming_opts_for_model(&cap->model);
    if (f->tags && !strcmp(f->tags, "auto")) no.mode = AC_TAGS_AUTO;
    else if (f->tags && !strcmp(f->tags, "off")) no.mode = AC_TAGS_OFF;
    else if (f->tags && !words) return ac_errf(err, "--tags must be auto or off, not '%s'", f->tags);
    else if (f->tags) no.mode = AC_TAGS_GIVEN, no.words = f->tags;
    if (f->threshold >= 0) no.threshold = f->threshold;
    if (f->max_drop >= 0) no.max_drop = f->max_drop;
    if (f->absent >= 0) no.absent = f->absent;
    if (f->min_confidence >= 0) no.min_confidence = f->min_confidence;
    if (f->trust_logprob <= 0) no.trust_logprob = f->trust_logprob;
    if (f->presence_absent >= 0) no.presence_absent = f->presence_absent;
    if (f->presence_ratio >= 0) no.presence_ratio = f->presence_ratio;
    if (f->trust_seen >= 0) no.trust_seen = f->trust_seen;
    if (f->rare_max_drop >= 0) no.rare_max_drop = f->rare_max_drop;
    if (f->objects_only >= 0) no.tag_objects_only = f->objects_only > 0;
    if (f->min_precision >= 0) no.min_precision = f->min_precision;
    if (f->absent_object >= 0) no.absent_object = f->absent_object;
    return ac_captioner_set_naming(cap, &no, f->table, err);
}
