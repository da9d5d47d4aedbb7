/* naming_opts.c: the naming's settings and the model file's "naming" record of them (naming_opts.h). */
#include "attncap/naming_opts.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <string.h>

ac_naming_opts ac_naming_defaults(void) {
    ac_naming_opts o = {.mode = AC_TAGS_OFF, .threshold = 0.5f, .max_tags = 2, .max_drop = 0.6f, .min_confidence = 0};
    return o;
}

/* The float keys of a "naming" record, each a number in [lo, hi]; beside them max_tags (a whole number
 * in [0, AC_MAX_CONSTRAINTS]) and tag_objects_only (a number in [0, 1]: on when above 0). */
#define NAMING_KEYS(o)                                                                                               \
    {"threshold", &(o).threshold, 0, 1}, {"max_drop", &(o).max_drop, 0, 100},                                        \
    {"min_confidence", &(o).min_confidence, 0, 1}, {"absent", &(o).absent, 0, 1},                                    \
    {"absent_object", &(o).absent_object, 0, 1}, {"trust_logprob", &(o).trust_logprob, -100, 0},                     \
    {"presence_absent", &(o).presence_absent, 0, 1}, {"presence_ratio", &(o).presence_ratio, 0, 100},                \
    {"trust_seen", &(o).trust_seen, 0, 1e9}, {"rare_max_drop", &(o).rare_max_drop, 0, 100},                          \
    {"tag_min_precision", &(o).min_precision, 0, 1}

/* Checks the record and, when o is not NULL and every key passes, sets o's fields from it. */
static int read_record(const char *json, ac_naming_opts *o, ac_err *err) {
    ac_naming_opts got = o ? *o : ac_naming_defaults();
    const struct { const char *k; float *v; double lo, hi; } f[] = {NAMING_KEYS(got)};
    cJSON *j = json ? cJSON_Parse(json) : NULL;
    if (!cJSON_IsObject(j)) {
        cJSON_Delete(j);
        return ac_errf(err, "not a JSON object");
    }
    const cJSON *x;
    int rc = 0;
    cJSON_ArrayForEach(x, j) {
        size_t i = 0;
        while (i < sizeof f / sizeof *f && strcmp(f[i].k, x->string)) i++;
        const int in_table = i < sizeof f / sizeof *f, objects_only = !strcmp(x->string, "tag_objects_only");
        const int max_tags = !strcmp(x->string, "max_tags");
        const double lo = in_table ? f[i].lo : 0, hi = in_table ? f[i].hi : objects_only ? 1 : AC_MAX_CONSTRAINTS;
        if (!in_table && !objects_only && !max_tags) {
            rc = ac_errf(err, "unknown key '%.80s'", x->string);
            break;
        }
        if (!cJSON_IsNumber(x) || !(x->valuedouble >= lo && x->valuedouble <= hi)) {
            rc = ac_errf(err, "'%s' must be a number in [%g, %g]", x->string, lo, hi);
            break;
        }
        if (max_tags && x->valuedouble != floor(x->valuedouble)) {
            rc = ac_errf(err, "'max_tags' must be a whole number in [0, %d]", AC_MAX_CONSTRAINTS);
            break;
        }
        if (in_table) *f[i].v = (float)x->valuedouble;
        else if (objects_only) got.tag_objects_only = x->valuedouble > 0;
        else got.max_tags = (int)x->valuedouble;
    }
    cJSON_Delete(j);
    if (!rc && o) *o = got;
    return rc;
}

int ac_naming_check_json(const char *json, ac_err *err) { return read_record(json, NULL, err); }

int ac_naming_apply_json(ac_naming_opts *o, const char *json, ac_err *err) { return read_record(json, o, err); }

ac_naming_opts ac_naming_opts_for_model(const ac_model *m) {
    ac_naming_opts o = ac_naming_defaults();
    ac_err e;
    if (m->naming_json && read_record(m->naming_json, &o, &e) == 0) o.mode = AC_TAGS_AUTO;
    return o;
}
