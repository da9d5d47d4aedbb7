/* presence_data.c: the presence head's training set (presence_data.h). */
#include "attncap/presence_data.h"
#include "alloc_internal.h"

#include <stdlib.h>
#include <string.h>

void ac_presence_set_free(ac_presence_set *s) {
    if (!s) return;
    free(s->x), free(s->y);
    memset(s, 0, sizeof *s);
}

int ac_presence_set_build(const ac_feature_cache *fc, const ac_dataset *sets, int n_sets, ac_split split,
                          ac_presence_set *out, ac_err *err) {
    memset(out, 0, sizeof *out);
    const int L = fc->grid_h * fc->grid_w, dim = fc->dim;
    int cap = 0;
    for (int s = 0; s < n_sets; s++) cap += sets[s].n;
    uint8_t *used = ac_calloc((size_t)(fc->n > 0 ? fc->n : 1), 1);
    float *scratch = ac_malloc(sizeof *scratch * (size_t)L * dim);
    out->x = ac_malloc(sizeof *out->x * (size_t)(cap > 0 ? cap : 1) * dim);
    out->y = ac_calloc((size_t)(cap > 0 ? cap : 1), AC_N_OBJECTS);
    out->dim = dim;
    int rc = !used || !scratch || !out->x || !out->y ? ac_errf(err, "out of memory") : 0;
    const ac_grid_window whole = {0, 0, fc->grid_h, fc->grid_w};
    for (int s = 0; !rc && s < n_sets; s++)
        for (int i = 0; !rc && i < sets[s].n; i++) {
            const ac_ds_image *im = &sets[s].images[i];
            if (split != AC_SPLIT_NONE && im->split != split) continue;
            const int row = ac_features_find(fc, im->key);
            if (row < 0) {
                out->missing++;
                continue;
            }
            if (used[row]) continue;
            used[row] = 1;
            int named[AC_N_OBJECTS] = {0};
            for (int c = 0; !rc && c < im->n_caps; c++) {
                uint8_t present[AC_N_OBJECTS];
                if (ac_objects_in_text(im->caps[c], present, err) < 0) {
                    rc = ac_err_prefix(err, "%s", im->key);
                    break;
                }
                for (int k = 0; k < AC_N_OBJECTS; k++) named[k] += present[k];
            }
            const int need = im->n_caps < AC_OBJECTS_TRUTH_REFS ? im->n_caps : AC_OBJECTS_TRUTH_REFS;
            uint8_t *y = out->y + (size_t)out->n * AC_N_OBJECTS;
            for (int k = 0; k < AC_N_OBJECTS; k++)
                if (need > 0 && named[k] >= need) y[k] = 1, out->positives[k]++;
            ac_presence_pool(ac_features_row(fc, row, scratch), fc->grid_w, dim, &whole, out->x + (size_t)out->n * dim);
            out->n++;
        }
    if (!rc && out->n == 0) rc = ac_errf(err, "no photo of the captioned sets is in the feature cache");
    free(used), free(scratch);
    if (rc) ac_presence_set_free(out);
    return rc;
}

/* phrase with its last word made plural the regular way (objects.h: +s; +es after s x z ch sh o;
 * consonant + y -> ies). malloc'd. */
static char *plural(const char *phrase) {
    const size_t n = strlen(phrase);
    char *p = ac_malloc(n + 3);
    if (!p) return NULL;
    memcpy(p, phrase, n + 1);
    const char last = n ? phrase[n - 1] : 0, before = n > 1 ? phrase[n - 2] : 0;
    if (last == 'y' && before && !strchr("aeiou", before)) strcpy(p + n - 1, "ies");
    else if (strchr("sxzo", last) || (last == 'h' && (before == 'c' || before == 's'))) strcpy(p + n, "es");
    else strcpy(p + n, "s");
    return p;
}

/* Adds form to g unless it is there; takes ownership. -1: out of memory, or more forms than a group
 * holds (err says which): never a silently shorter list, whose missing words the ban would let through. */
static int add_form(ac_presence_group *g, char *form, ac_err *err) {
    if (!form) return ac_errf(err, "out of memory");
    for (int f = 0; f < g->n_forms; f++)
        if (!strcmp(g->forms[f], form)) return free(form), 0;
    if (g->n_forms == AC_PRESENCE_MAX_FORMS)
        return free(form), ac_errf(err, "category '%s' has more than %d forms", g->name, AC_PRESENCE_MAX_FORMS);
    g->forms[g->n_forms++] = form;
    return 0;
}

int ac_presence_set_labels(const ac_presence_set *s, const int *cats, int k, uint8_t **y_out, float *prior, ac_err *err) {
    uint8_t *y = ac_malloc((size_t)(s->n > 0 ? s->n : 1) * (size_t)(k > 0 ? k : 1));
    if (!(*y_out = y)) return ac_errf(err, "out of memory");
    for (int j = 0; j < k; j++) {
        for (int i = 0; i < s->n; i++) y[(size_t)i * k + j] = s->y[(size_t)i * AC_N_OBJECTS + cats[j]];
        if (prior) prior[j] = s->n > 0 ? (float)s->positives[cats[j]] / (float)s->n : 0;
    }
    return 0;
}

int ac_presence_set_groups(const ac_presence_set *s, int min_photos, ac_presence_group **groups,
                           int cats[AC_N_OBJECTS], uint8_t **y_out, ac_err *err) {
    int k = 0;
    for (int c = 0; c < AC_N_OBJECTS; c++)
        if (s->positives[c] >= min_photos) cats[k++] = c;
    *groups = NULL, *y_out = NULL;
    if (!k) return 0;
    return ac_presence_set_groups_of(s, cats, k, groups, y_out, err) ? -1 : k;
}

int ac_presence_set_groups_of(const ac_presence_set *s, const int *cats, int k, ac_presence_group **groups,
                              uint8_t **y_out, ac_err *err) {
    *groups = NULL, *y_out = NULL;
    ac_presence_group *g = ac_calloc((size_t)k, sizeof *g);
    float prior[AC_N_OBJECTS];
    if (!g) return ac_errf(err, "out of memory");
    int rc = ac_presence_set_labels(s, cats, k, y_out, prior, err);
    for (int j = 0; !rc && j < k; j++) {
        g[j].prior = prior[j];
        g[j].forms = ac_calloc(AC_PRESENCE_MAX_FORMS + 1, sizeof *g[j].forms);
        if (!(g[j].name = ac_strdup(ac_object_name(cats[j]))) || !g[j].forms) rc = ac_errf(err, "out of memory");
        for (const char *const *syn = ac_object_synonyms(cats[j]); !rc && *syn; syn++)
            rc = add_form(&g[j], ac_strdup(*syn), err) || add_form(&g[j], plural(*syn), err) ? -1 : 0;
    }
    if (rc) {
        ac_presence_groups_free(g, k);
        free(*y_out), *y_out = NULL;
        return -1;
    }
    *groups = g;
    return 0;
}
