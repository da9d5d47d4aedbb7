/* tool_tune.c: the tool "tune" (tool_internal.h; `attncap tune`): a model's decoding setting (beam width
 * and length normalisation) picked on held-out photos over a grid, or a copy model's absent priors
 * matched there, or the naming and repeat records written into the model file. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/dataset.h"
#include "attncap/imagenet_words.h"
#include "attncap/naming_opts.h"
#include "attncap/objects.h"
#include "attncap/tune.h"
#include "alloc_internal.h"
#include "tool_internal.h"

#define MAX_GRID 16

typedef struct tune_opts {
    const char *model, *data, *features, *detections, *split, *metric, *beams, *alphas, *naming, *repeats;
    int limit, meteor, write, threads, json, max_len, absent, repeat_min, repeat_objects;
    float repeat_rate;
} tune_opts;

#define TXT(k) {#k, OPTION_TEXT, offsetof(tune_opts, k), 0, 0}
#define INT(k, lo, hi) {#k, OPTION_INT, offsetof(tune_opts, k), lo, hi}
#define SWITCH(k) {#k, OPTION_SWITCH, offsetof(tune_opts, k), 0, 1}
static const option OPTIONS[] = {
    TXT(naming), TXT(repeats), {"repeat_rate", OPTION_FLOAT, offsetof(tune_opts, repeat_rate), 0, 1},
    INT(repeat_min, 1, 1e9), INT(repeat_objects, 0, 1), TXT(model), TXT(data), TXT(features), TXT(detections),
    TXT(split), TXT(metric), TXT(beams), TXT(alphas), INT(limit, 1, 1e6), INT(max_len, 1, 200), INT(threads, 1, 256),
    SWITCH(meteor), SWITCH(write), SWITCH(absent), SWITCH(json),
};
#undef TXT
#undef INT
#undef SWITCH

static void defaults(void *state) {
    tune_opts *o = state;
    o->split = "val", o->metric = "cider", o->beams = "1,3,5", o->alphas = "0,0.5,1,1.5";
    o->meteor = 1, o->max_len = 20, o->repeat_rate = 0.05f, o->repeat_min = 30, o->repeat_objects = 1;
}

/* "1,3,5" -> values; returns the count or -1. */
static int parse_list(const char *s, double lo, double hi, double *out) {
    int n = 0;
    const char *p = s;
    while (*p) {
        char *end;
        double v = strtod(p, &end);
        if (end == p || n == MAX_GRID || !(v >= lo && v <= hi)) return -1;
        out[n++] = v;
        if (*end == ',') end++;
        else if (*end) return -1;
        p = end;
    }
    return n;
}

static double objective(const ac_scores *s, const char *metric) {
    if (!strcmp(metric, "bleu4")) return s->bleu[3];
    if (!strcmp(metric, "meteor")) return s->meteor;
    if (!strcmp(metric, "bleu4+meteor")) return s->bleu[3] + s->meteor;
    return s->cider_d;
}

/* --naming JSON: records how tags become constraints (naming.h), as chosen on dev photos: a record the
 * model file would refuse (ac_naming_check_json) is not written. */
static int write_naming(ac_tool *t, const char *model_path, const char *json, ac_err *err) {
    ac_err why;
    if (ac_naming_check_json(json, &why))
        return ac_errc(err, AC_ERR_OPTIONS, "naming: %s (keys and ranges: docs/naming.md)", why.msg);
    if (ac_model_set_meta(model_path, "naming", json, err)) return -1;
    ac_tool_printf(t, "naming %s written to %s\n", json, model_path);
    return 0;
}

/* --repeats SPECS: records decode "repeatable", the words people say twice in one caption. */
static int write_repeats(ac_tool *t, const char *model_path, const char *specs, double rate, int min_captions,
                         int objects, ac_err *err) {
    ac_model model = {0};
    ac_tokens *toks = NULL;
    int n = 0, cap = 0, rc = -1;
    unsigned char *ok = NULL;
    cJSON *rec = NULL, *words = NULL;
    char *json = NULL;
    if (ac_model_load(model_path, &model, err) ||
        ac_dataset_read_tokens(specs, AC_SPLIT_TRAIN, 200, &toks, &n, &cap, err))
        goto done;
    const int V = ac_vocab_size(model.vocab);
    if (!(ok = ac_malloc((size_t)V)) || !(rec = cJSON_CreateObject()) || !(words = cJSON_AddArrayToObject(rec, "repeatable"))) {
        ac_errf(err, "out of memory");
        goto done;
    }
    if (ac_vocab_repeatable(model.vocab, toks, n, rate, min_captions, ok, err)) goto done;
    if (objects) ac_objects_repeatable(model.vocab, ok);
    int n_ok = 0;
    for (int w = 0; w < V; w++)
        if (ok[w]) cJSON_AddItemToArray(words, cJSON_CreateString(ac_vocab_word(model.vocab, w))), n_ok++;
    cJSON_AddNumberToObject(rec, "repeat_rate", round(rate * 1e6) / 1e6); /* as given, not float's 0.0500000007 */
    cJSON_AddNumberToObject(rec, "repeat_min", min_captions);
    cJSON_AddNumberToObject(rec, "repeat_captions", n);
    cJSON_AddBoolToObject(rec, "repeat_objects", objects);
    if (!(json = cJSON_PrintUnformatted(rec))) {
        ac_errf(err, "out of memory");
        goto done;
    }
    if (ac_model_merge_meta(model_path, "decode", json, err)) goto done;
    ac_tool_printf(t, "%d of %d words may be said twice in a caption (twice in >= %g of the captions that use them, of %d "
           "training captions%s); recorded in %s\n", n_ok, V - AC_UNK - 1, rate, n,
           objects ? ", and the objects' words but a person's" : "", model_path);
    rc = 0;
done:
    for (int i = 0; i < n; i++) ac_tokens_free(&toks[i]);
    free(toks), free(ok), cJSON_free(json), cJSON_Delete(rec);
    ac_model_free(&model);
    return rc;
}

/* tune_absent: a copy model's absent priors matched on the photos (tune.h ac_absent_match), printed, and
 * with write recorded in the model file (config.absent). */
static int tune_absent(ac_tool *t, ac_model *m, const ac_feature_cache *fc, const ac_rows_regions *regions,
                       const ac_tune_photo *photos, int n, const char *model_path, int write, int threads, ac_err *err) {
    ac_absent_match_report r;
    if (ac_absent_match(m, fc, regions, photos, n, &m->decode, 3, threads, &r, err)) return -1;
    ac_tool_printf(t, "absent priors matched on %d photos in %d rounds: captions naming an object no region shows\n"
                      "object                 refs   before  after  prior\n", r.photos, r.rounds);
    double tb = 0, ta = 0, tr = 0;
    for (int c = 0; c < AC_COPY_CATEGORIES; c++) {
        tb += r.said_before[c], ta += r.said_after[c], tr += r.refs[c];
        if (r.refs[c] >= 1 || r.said_before[c] >= 1 || r.said_after[c] >= 1)
            ac_tool_printf(t, "%-22s %6.1f %6.0f %6.0f %6.2f\n", ac_object_name(c), r.refs[c], r.said_before[c],
                           r.said_after[c], r.prior[c]);
    }
    ac_tool_printf(t, "%-22s %6.1f %6.0f %6.0f\n", "all", tr, tb, ta);
    if (!write) return 0;
    if (ac_model_set_absent(model_path, r.prior, err)) return -1;
    ac_tool_printf(t, "recorded in %s (config.absent)\n", model_path);
    return 0;
}

static int run(ac_tool *t, void *state, ac_err *err) {
    const tune_opts *o = state;
    const char *model_path = o->model, *data = o->data, *features = o->features, *detections = o->detections;
    const char *split = o->split, *metric = o->metric, *beams_s = o->beams, *alphas_s = o->alphas;
    const int limit = o->limit, meteor = o->meteor, write = o->write, threads = o->threads, json = o->json;
    const int max_len = o->max_len, absent = o->absent;
    const char *naming = o->naming, *repeats = o->repeats;
    if (model_path && naming) return write_naming(t, model_path, naming, err);
    if (model_path && repeats)
        return write_repeats(t, model_path, repeats, o->repeat_rate, o->repeat_min, o->repeat_objects, err);
    if (!model_path || !data || !features)
        return ac_errc(err, AC_ERR_OPTIONS, "the options model, data and features are required");
    if (strcmp(metric, "cider") && strcmp(metric, "bleu4") && strcmp(metric, "meteor") && strcmp(metric, "bleu4+meteor"))
        return ac_errc(err, AC_ERR_OPTIONS, "option 'metric' must be cider, bleu4, meteor or bleu4+meteor, not '%s'", metric);
    if (!meteor && strstr(metric, "meteor"))
        return ac_errc(err, AC_ERR_OPTIONS, "metric %s needs METEOR (not meteor 0)", metric);
    double bv[MAX_GRID], av[MAX_GRID];
    const int nb = parse_list(beams_s, 1, 100, bv), na = parse_list(alphas_s, 0, 10, av);
    if (nb < 1 || na < 1)
        return ac_errc(err, AC_ERR_OPTIONS,
                       "%s: want a comma-separated list of up to %d numbers (beams 1..100, alphas 0..10)",
                       nb < 1 ? beams_s : alphas_s, MAX_GRID);
    int beams[MAX_GRID];
    float alphas[MAX_GRID];
    for (int i = 0; i < nb; i++) beams[i] = (int)bv[i];
    for (int i = 0; i < na; i++) alphas[i] = (float)av[i];

    ac_model model = {0};
    ac_dataset ds = {0};
    ac_feature_cache fc = {0};
    ac_rows_regions regions = {0};
    ac_tune_photo *photos = NULL;
    ac_tune_point *pts = NULL;
    int rc = -1, n = 0;
    ac_split want = AC_SPLIT_NONE;
    if (strcmp(split, "all") && (want = ac_split_parse(split)) == AC_SPLIT_NONE)
        return ac_errc(err, AC_ERR_OPTIONS, "unknown split '%s' (val, test, train or all)", split);
    if (ac_model_load(model_path, &model, err) || ac_dataset_load(data, NULL, &ds, err)) goto fail;
    if (ac_decoder_use_f16(&model.dec) < 0) {
        ac_errf(err, "out of memory");
        goto fail;
    }
    const char **keys = ac_malloc(((size_t)ds.n + 1) * sizeof *keys); /* only the split's rows are read */
    int n_keys = 0;
    for (int i = 0; keys && i < ds.n; i++)
        if ((want == AC_SPLIT_NONE || ds.images[i].split == want) && ds.images[i].n_caps > 0)
            keys[n_keys++] = ds.images[i].key;
    if (!keys) ac_errf(err, "out of memory");
    if (!keys || ac_features_load_keys(features, keys, n_keys, &fc, err)) {
        free(keys);
        goto fail;
    }
    free(keys);
    const ac_decoder_config *cfg = &model.dec.cfg;
    if (cfg->regions > 0 && !detections) {
        ac_errc(err, AC_ERR_OPTIONS, "%s attends to detected objects: give its photos' detections (the option detections)",
                model_path);
        goto fail;
    }
    if (detections && cfg->regions > 0 &&
        (ac_rows_regions_load(detections, &fc, cfg->region_min_score, cfg->regions, &regions, NULL, err) ||
         ac_imagenet_words_add_to_rows(&model.imagenet, &fc, model_path, cfg->region_min_score, cfg->regions, 0,
                                       &regions, err)))
        goto fail;
    if (fc.grid_h * fc.grid_w + cfg->regions != cfg->n_ann || fc.dim != cfg->dim) {
        ac_errf(err, "%s: features of %dx%dx%d do not fit the model (L %d, D %d)", features, fc.grid_h, fc.grid_w,
                fc.dim, model.dec.cfg.n_ann, model.dec.cfg.dim);
        goto fail;
    }
    photos = ac_calloc((size_t)ds.n + 1, sizeof *photos);
    pts = ac_calloc((size_t)(nb * na), sizeof *pts);
    if (!photos || !pts) {
        ac_errf(err, "out of memory");
        goto fail;
    }
    for (int i = 0; i < ds.n && (!limit || n < limit); i++) {
        const ac_ds_image *im = &ds.images[i];
        if ((want != AC_SPLIT_NONE && im->split != want) || im->n_caps == 0) continue;
        int row = ac_features_find(&fc, im->key);
        if (row < 0) {
            ac_errf(err, "%s: no features for '%s' (run attncap features on the split's photos)", features, im->key);
            goto fail;
        }
        photos[n++] = (ac_tune_photo){row, im->id, im->n_caps, (const char *const *)im->caps};
    }
    if (n == 0) {
        ac_errf(err, "%s: no photos with captions in split '%s'", data, split);
        goto fail;
    }
    if (absent) {
        rc = tune_absent(t, &model, &fc, regions.n ? &regions : NULL, photos, n, model_path, write, threads, err);
        goto fail;
    }
    ac_beam_opts base = model.decode; /* the grid sets beam and len_alpha */
    base.max_len = max_len;
    if (ac_tune_grid(&model, &fc, regions.n ? &regions : NULL, photos, n, &base, beams, nb, alphas, na, meteor, NULL,
                     threads, pts, err))
        goto fail;
    int best = 0;
    for (int k = 1; k < nb * na; k++)
        if (objective(&pts[k].scores, metric) > objective(&pts[best].scores, metric)) best = k;
    if (!json)
        ac_tool_printf(t, "%d photos of %s (%s), maximising %s\n beam alpha  BLEU-1 BLEU-2 BLEU-3 BLEU-4 METEOR ROUGE-L CIDEr-D\n", n,
               data, split, metric);
    for (int k = 0; k < nb * na; k++) {
        const ac_scores *s = &pts[k].scores;
        if (json)
            ac_tool_printf(t, "{\"beam\": %d, \"len_alpha\": %g, \"BLEU-1\": %.6f, \"BLEU-2\": %.6f, \"BLEU-3\": %.6f, \"BLEU-4\": %.6f, "
                   "\"METEOR\": %.6f, \"ROUGE-L\": %.6f, \"CIDEr-D\": %.6f}\n",
                   pts[k].opts.beam, pts[k].opts.len_alpha, s->bleu[0], s->bleu[1], s->bleu[2], s->bleu[3],
                   isfinite(s->meteor) ? s->meteor : -1, s->rouge_l, s->cider_d);
        else {
            char met[16] = "     -";
            if (isfinite(s->meteor)) snprintf(met, sizeof met, "%6.1f", 100 * s->meteor);
            ac_tool_printf(t, "%5d %5.2f  %6.1f %6.1f %6.1f %6.1f %s %7.1f %7.1f%s\n", pts[k].opts.beam, pts[k].opts.len_alpha,
                   100 * s->bleu[0], 100 * s->bleu[1], 100 * s->bleu[2], 100 * s->bleu[3], met, 100 * s->rouge_l,
                   100 * s->cider_d, k == best ? "  <- best" : "");
        }
    }
    char decode[512];
    snprintf(decode, sizeof decode, "{\"beam\":%d,\"len_alpha\":%g,\"max_len\":%d,\"chosen_by\":\"%s\",\"photos\":%d,\"split\":\"%s\"}",
             pts[best].opts.beam, pts[best].opts.len_alpha, max_len, metric, n, split);
    if (json) ac_tool_printf(t, "{\"best\": %s}\n", decode); /* then --write records it */
    if (write) {
        if (ac_model_merge_meta(model_path, "decode", decode, err)) goto fail; /* keeps "repeatable" */
        if (!json) ac_tool_printf(t, "recorded in %s: %s\n", model_path, decode);
    }
    rc = 0;
fail:
    free(photos), free(pts);
    ac_features_free(&fc), ac_rows_regions_free(&regions);
    ac_dataset_free(&ds), ac_model_free(&model);
    return rc;
}

static const tool_kind KIND = {"tune", OPTIONS, (int)(sizeof OPTIONS / sizeof OPTIONS[0]), {NULL, NULL},
                                sizeof(tune_opts), defaults, run};
const tool_kind *ac_tool_tune_kind(void) { return &KIND; }
