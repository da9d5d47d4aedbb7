/* tool_presence.c: the tool "presence" (tool_internal.h; `attncap presence`): fits the presence head
 * (presence.h) on captioned photos' features: one logistic classifier per COCO category over the photos'
 * mean annotation vector, labelled by their references. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/features.h"
#include "attncap/presence_data.h"
#include "alloc_internal.h"
#include "tool_internal.h"

#define MAX_SETS 16

typedef struct presence_opts {
    const char *features, *out, *split, *init;
    int min_photos;
    ac_presence_fit_opts fo;
} presence_opts;

static const option OPTIONS[] = {
    {"features", OPTION_TEXT, offsetof(presence_opts, features), 0, 0},
    {"out", OPTION_TEXT, offsetof(presence_opts, out), 0, 0},
    {"split", OPTION_TEXT, offsetof(presence_opts, split), 0, 0},
    {"init", OPTION_TEXT, offsetof(presence_opts, init), 0, 0},
    {"min_photos", OPTION_INT, offsetof(presence_opts, min_photos), 1, 1000000},
    {"steps", OPTION_INT, offsetof(presence_opts, fo.steps), 0, 1000000},
    {"lr", OPTION_FLOAT, offsetof(presence_opts, fo.lr), 1e-6, 10},
    {"l2", OPTION_FLOAT, offsetof(presence_opts, fo.l2), 0, 10},
};

static void defaults(void *state) {
    presence_opts *o = state;
    o->split = "train", o->min_photos = 20, o->fo = ac_presence_fit_defaults();
}

/* --init: head = the file's (same encoder and vector size as the photos'), cats its groups' categories,
 * y_out the set's labels of them; its groups made anew (the forms objects.h gives the category now,
 * the prior the share of the set's photos that show it). */
static int start_from(const char *path, const ac_presence_set *set, const char *encoder_json, ac_presence *head,
                      int cats[AC_N_OBJECTS], uint8_t **y_out, ac_err *err) {
    if (ac_presence_load(path, head, err)) return -1;
    if (head->dim != set->dim || strcmp(head->encoder_json, encoder_json))
        return ac_errf(err, "%s: fitted on another encoder's features than the cache's", path);
    if (head->k > AC_N_OBJECTS) return ac_errf(err, "%s: %d groups, more than COCO's %d categories", path, head->k, AC_N_OBJECTS);
    for (int j = 0; j < head->k; j++)
        if ((cats[j] = ac_object_index(head->groups[j].name)) < 0)
            return ac_errf(err, "%s: group '%s' is not one of COCO's categories", path, head->groups[j].name);
    ac_presence_group *groups;
    if (ac_presence_set_groups_of(set, cats, head->k, &groups, y_out, err)) return -1;
    ac_presence_groups_free(head->groups, head->k);
    head->groups = groups;
    return 0;
}

static int on_step(void *ctx, int step, int steps, double loss) {
    char status[32];
    snprintf(status, sizeof status, "loss %.4f", loss);
    ac_tool_progress_status(ctx, step, steps, status);
    return 0;
}

static int run(ac_tool *t, void *state, ac_err *err) {
    const presence_opts *o = state;
    const char *features = o->features, *out = o->out, *split_s = o->split, *init = o->init;
    const char *const *data = (const char *const *)t->items[0];
    const int n_data = t->n_items[0], min_photos = o->min_photos;
    ac_presence_fit_opts fo = o->fo;
    const ac_split split = !strcmp(split_s, "all") ? AC_SPLIT_NONE : ac_split_parse(split_s);
    if (!features || !out || !n_data || (split == AC_SPLIT_NONE && strcmp(split_s, "all")))
        return ac_errc(err, AC_ERR_OPTIONS, "needs the options features, data and out, and split train, val, test or all");
    if (n_data > MAX_SETS) return ac_errc(err, AC_ERR_OPTIONS, "at most %d data sets", MAX_SETS);
    if (fo.steps == 0 && !init) return ac_errc(err, AC_ERR_OPTIONS, "steps 0 needs init (a head to keep)");
    ac_feature_cache fc = {0};
    ac_dataset sets[MAX_SETS] = {0};
    ac_presence_set set = {0};
    ac_presence head = {0};
    ac_presence_group *groups = NULL;
    uint8_t *y = NULL;
    int cats[AC_N_OBJECTS], k = 0, rc = -1, loaded = 0;
    if (ac_features_load_compact(features, &fc, err)) goto fail;
    for (; loaded < n_data; loaded++)
        if (ac_dataset_load(data[loaded], NULL, &sets[loaded], err)) goto fail;
    if (ac_presence_set_build(&fc, sets, n_data, split, &set, err)) goto fail;
    if (init) {
        if (start_from(init, &set, fc.encoder_json, &head, cats, &y, err)) goto fail;
        ac_tool_say(t, "%d photos (%d of the sets not in the cache), the %d categories of %s", set.n, set.missing, head.k,
                    init);
    } else {
        if ((k = ac_presence_set_groups(&set, min_photos, &groups, cats, &y, err)) < 0) goto fail;
        if (k == 0) {
            ac_errf(err, "no category is named in %d or more of the %d photos", min_photos, set.n);
            goto fail;
        }
        if (ac_presence_init(&head, k, set.dim, groups, fc.encoder_json, err)) goto fail;
        ac_tool_say(t, "%d photos (%d of the sets not in the cache), %d categories with %d or more photos", set.n,
                    set.missing, k, min_photos);
    }
    ac_tool_progress(t, 0, fo.steps);
    fo.progress = on_step, fo.ctx = t;
    double loss = 0;
    const int fit_rc = ac_presence_fit(&head, set.x, y, set.n, &fo, &loss, err);
    if (fit_rc) goto fail;
    cJSON *nj = cJSON_CreateObject();
    cJSON_AddNumberToObject(nj, "photos", set.n);
    if (init) cJSON_AddStringToObject(nj, "init", init);
    else cJSON_AddNumberToObject(nj, "min_photos", min_photos);
    cJSON_AddNumberToObject(nj, "steps", fo.steps);
    cJSON_AddNumberToObject(nj, "lr", round(fo.lr * 1e9) / 1e9); /* as given, not the float's binary tail */
    cJSON_AddNumberToObject(nj, "l2", round(fo.l2 * 1e9) / 1e9);
    cJSON_AddNumberToObject(nj, "loss", round(loss * 1e6) / 1e6);
    char *notes = nj ? cJSON_PrintUnformatted(nj) : NULL;
    cJSON_Delete(nj);
    if (!notes) {
        ac_errf(err, "out of memory");
        goto fail;
    }
    const int save_rc = ac_presence_save(&head, out, 1, notes, err);
    cJSON_free(notes);
    if (save_rc) goto fail;
    const int kh = head.k; /* the groups fitted: the data's, or --init's */
    float *prob = ac_malloc(sizeof *prob * (size_t)set.n * kh);
    if (prob) ac_presence_forward(&head, set.x, set.n, prob);
    for (int j = 0; prob && j < kh; j++) {
        int right = 0;
        for (int i = 0; i < set.n; i++) right += (prob[(size_t)i * kh + j] >= 0.5f) == y[(size_t)i * kh + j];
        ac_tool_printf(t, "%-16s %6d photos (prior %.4f)  training accuracy %.3f\n", head.groups[j].name, set.positives[cats[j]],
               head.groups[j].prior, (double)right / set.n);
    }
    free(prob);
    ac_tool_printf(t, "loss %.4f; wrote %s\n", loss, out);
    rc = 0;
fail:
    ac_presence_free(&head);
    ac_presence_groups_free(groups, k > 0 ? k : 0);
    free(y);
    ac_presence_set_free(&set);
    for (int i = 0; i < loaded; i++) ac_dataset_free(&sets[i]);
    ac_features_free(&fc);
    return rc;
}

static const tool_kind KIND = {"presence", OPTIONS, (int)(sizeof OPTIONS / sizeof OPTIONS[0]), {"data", NULL},
                                    sizeof(presence_opts), defaults, run};
const tool_kind *ac_tool_presence_kind(void) { return &KIND; }
