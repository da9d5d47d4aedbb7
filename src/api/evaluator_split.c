/* evaluator_split.c: an evaluation of "data": its split captioned, by the whole captioner (photo -> CNN ->
 * search, in the library's lanes) or by the model alone over a feature cache (evaluator_internal.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/captioner.h"
#include "attncap/dataset.h"
#include "attncap/features.h"
#include "attncap/report.h"
#include "alloc_internal.h"
#include "evaluator_internal.h"

/* What the results of a split go into, and the first failure. */
typedef struct split_run {
    const ac_evaluator *o;
    const ac_dataset *ds;
    const int *sel; /* result q is photo ds->images[sel[q]] */
    ac_eval_set *set;
    char **thumbs, **sheets; /* NULL without a report */
    const ac_font *font;     /* NULL: no sheets */
    const ac_model *model;
    int grid_h, grid_w;
    int done, total; /* photos captioned, for the events */
    int rc;
    ac_err *err;
} split_run;

static void progress(split_run *r) {
    if (!r->o->on_event) return;
    const ac_eval_event ev = {.done = r->done, .total = r->total};
    r->o->on_event(&ev, r->o->user);
}

/* Result q: scored, and with a report its thumbnail and sheet (photo NULL: none to show). */
static void add_result(split_run *r, int q, const ac_image *photo, const ac_caption *c) {
    const ac_ds_image *im = &r->ds->images[r->sel[q]];
    const ac_evaluator *o = r->o;
    char *text = ac_caption_text(c, r->model->vocab);
    int rc = 0;
    /* an empty caption (immediate <end>) is still a result: score it as "" */
    if (!text || ac_eval_set_add(r->set, im->id, (const char *const *)im->caps, im->n_caps, text, 1, r->err)) rc = -1;
    if (!rc && !(r->set->items[r->set->n - 1].path = ac_strdup(im->path))) rc = ac_errf(r->err, "out of memory");
    free(text);
    if (!rc && o->report && photo) {
        if (!(r->thumbs[q] = ac_report_thumb(o->report, q, photo, r->err))) rc = -1;
        if (!rc && r->font && c->n > 0 &&
            !(r->sheets[q] = ac_report_sheet(o->report, q, im->key, photo, c, r->model->vocab, r->grid_h, r->grid_w,
                                             r->font, o->threads, r->err)))
            rc = -1;
    }
    if (rc) r->rc = ac_err_prefix(r->err, "%s", im->path);
}

/* The model alone over cached features (the photo only serves the report; a missing one just leaves
 * its thumbnail out). */
static void caption_features(split_run *r, const ac_feature_cache *fc, const ac_beam_opts *bo, int n) {
    float *scratch = ac_malloc(sizeof(float) * (size_t)fc->grid_h * fc->grid_w * fc->dim); /* a row of an F16 cache */
    if (!scratch) r->rc = ac_errf(r->err, "out of memory");
    for (int q = 0; q < n && !r->rc; q++) {
        const ac_ds_image *im = &r->ds->images[r->sel[q]];
        ac_image photo = {0};
        ac_caption c = {0};
        ac_err e2;
        int k = ac_features_find(fc, im->key), gh = 0, gw = 0;
        if (k >= 0) ac_features_grid(fc, k, &gh, &gw); /* the photo's own (aspect kept) */
        if (k < 0) r->rc = ac_errf(r->err, "%s: no features for '%s'", r->o->features, im->key);
        else if (ac_beam_search_grid(&r->model->dec, ac_features_row(fc, k, scratch), gh, gw, bo, &c, r->err)) r->rc = -1;
        else {
            const int have_photo = r->o->report && ac_is_file(im->path) && ac_image_load(im->path, &photo, &e2) == 0;
            add_result(r, q, have_photo ? &photo : NULL, &c);
        }
        ac_caption_free(&c);
        ac_image_free(&photo);
        r->done++, progress(r);
    }
    free(scratch);
}

static void on_photo(void *user, const ac_batch_result *b) {
    split_run *r = user;
    if (r->rc) return; /* the first failure ends the evaluation; the lanes just finish */
    if (!b->ok) r->rc = -1, *r->err = b->err;
    else add_result(r, b->index, b->photo, b->caption);
    r->done++, progress(r);
}

/* photo -> CNN -> search, in the library's lanes (ac_captioner_batch): the captions of
 * ac_captioner_run, in order. */
static void caption_photos(split_run *r, ac_captioner *cap, int n) {
    const char **paths = ac_malloc((size_t)n * sizeof *paths);
    if (!paths) {
        r->rc = ac_errf(r->err, "out of memory");
        return;
    }
    for (int q = 0; q < n; q++) paths[q] = r->ds->images[r->sel[q]].path;
    if (ac_captioner_batch(cap, paths, n, r->o->threads, r->o->report != NULL, on_photo, r, NULL, r->err)) r->rc = -1;
    free(paths);
}

/* The captioner's naming as the options ask: the record over the model's first, with the tags' mode still
 * the opened captioner's, so that setting the tags loads what the record's settings need and checks it. */
static int set_naming(ac_captioner *cap, const ac_evaluator *o, ac_err *err) {
    if (o->naming && *o->naming && ac_captioner_set_naming_record(cap, o->naming, err)) return ac_err_prefix(err, "naming");
    if (ac_captioner_set_tags(cap, o->tags, NULL, err)) return ac_err_prefix(err, "tags");
    return 0;
}

int ac_evaluation_caption_split(ac_evaluator *o, char ***thumbs, char ***sheets, char **subtitle, ac_err *err) {
    ac_eval_set *set = &o->set;
    ac_dataset ds;
    if (ac_dataset_load(o->data, o->images, &ds, err)) return -1;
    ac_split want = AC_SPLIT_NONE;
    int all = !strcmp(o->split, "all");
    if (!all && (want = ac_split_parse(o->split)) == AC_SPLIT_NONE) {
        ac_dataset_free(&ds);
        return ac_errf(err, "unknown split '%s' (test, val, train or all)", o->split);
    }
    int *sel = ac_malloc((size_t)(ds.n ? ds.n : 1) * sizeof *sel), n = 0;
    for (int i = 0; sel && i < ds.n; i++)
        if ((all || ds.images[i].split == want) && ds.images[i].n_caps > 0 && (o->limit <= 0 || n < o->limit)) sel[n++] = i;
    int n_split = n, n_share = 0; /* --limit first, then this task's share of those */
    for (int i = 0; sel && i < n_split; i++)
        if (ac_shard_owns(&o->shard, ds.images[sel[i]].key)) sel[n_share++] = sel[i];
    n = n_share;
    if (sel && n == 0 && n_split > 0) { /* an empty share of a non-empty split: nothing to do */
        free(sel);
        ac_dataset_free(&ds);
        return 0;
    }
    if (!sel || n == 0) {
        free(sel);
        int cnt[4] = {0};
        for (int i = 0; i < ds.n; i++) cnt[ds.images[i].split]++;
        int rc = ac_errf(err, "%s: no photos with captions in split '%s' (it has train %d, val %d, test %d)", o->data,
                         o->split, cnt[AC_SPLIT_TRAIN], cnt[AC_SPLIT_VAL], cnt[AC_SPLIT_TEST]);
        ac_dataset_free(&ds);
        return rc;
    }
    /* Either the whole captioner (photo -> CNN -> beam) or the model alone over cached features. */
    ac_captioner cap;
    memset(&cap, 0, sizeof cap);
    ac_model model_only;
    memset(&model_only, 0, sizeof model_only);
    ac_feature_cache fc;
    memset(&fc, 0, sizeof fc);
    const ac_model *model = &cap.model;
    ac_beam_opts bo = ac_beam_defaults();
    int grid_h = 0, grid_w = 0, rc = 0;
    char enc_name[512] = "";
    if (o->features) {
        if (ac_model_init(o->model_path, &model_only, err) ||
            (o->hard_context && ac_decoder_hard_context(&model_only.dec, o->hard_context, err)) ||
            (o->fix_attention && ac_decoder_fix_attention(&model_only.dec, o->fix_attention, err)))
            rc = -1;
        else bo = model_only.decode;
        const char **keys = rc ? NULL : ac_malloc((size_t)n * sizeof *keys); /* only the split's rows are read */
        for (int i = 0; keys && i < n; i++) keys[i] = ds.images[sel[i]].key;
        if (!rc && !keys) rc = ac_errf(err, "out of memory");
        if (!rc && ac_features_load_keys(o->features, keys, n, &fc, err)) rc = -1;
        free(keys);
        if (!rc && model_only.encoder_json && fc.encoder_json) {
            ac_encoder_id a, b;
            if (ac_encoder_id_parse(model_only.encoder_json, "model", &a, err) ||
                ac_encoder_id_parse(fc.encoder_json, o->features, &b, err))
                rc = -1;
            else if (!ac_encoder_id_same(&a, &b))
                rc = ac_errf(err, "%s: features of encoder %s (layer '%s', size %d) but the model was trained on %s "
                                  "(layer '%s', size %d)", o->features, b.file, b.layer, b.size, a.file, a.layer, a.size);
        }
        if (!rc && (fc.grid_h * fc.grid_w != model_only.dec.cfg.n_ann || fc.dim != model_only.dec.cfg.dim))
            rc = ac_errf(err, "%s: features of %dx%dx%d do not fit the model (L %d, D %d)", o->features, fc.grid_h,
                         fc.grid_w, fc.dim, model_only.dec.cfg.n_ann, model_only.dec.cfg.dim);
        model = &model_only;
        grid_h = fc.grid_h, grid_w = fc.grid_w;
        snprintf(enc_name, sizeof enc_name, "features %s", o->features);
    } else {
        if (ac_captioner_init(&cap, o->model_path, o->encoder, o->threads, err) ||
            ac_captioner_set_precision(&cap, o->precision, err) || set_naming(&cap, o, err) ||
            (o->hard_context && ac_decoder_hard_context(&cap.model.dec, o->hard_context, err)) ||
            (o->fix_attention && ac_decoder_fix_attention(&cap.model.dec, o->fix_attention, err)))
            rc = -1;
        else bo = cap.beam, grid_h = cap.grid_h, grid_w = cap.grid_w, snprintf(enc_name, sizeof enc_name, "encoder %s", cap.id.file);
    }
    if (o->beam > 0) bo.beam = o->beam;
    if (o->len_alpha >= 0) bo.len_alpha = o->len_alpha;
    if (o->max_len > 0) bo.max_len = o->max_len;
    if (o->allow_repeats) bo.no_repeat = NULL;
    ac_font *font = NULL;
    if (!rc && o->report && o->sheets && ac_font_load(NULL, &font, err)) rc = -1;
    if (!rc && o->report) {
        *thumbs = ac_calloc((size_t)n, sizeof **thumbs);
        *sheets = ac_calloc((size_t)n, sizeof **sheets);
        if (!*thumbs || !*sheets) rc = ac_errf(err, "out of memory");
    }
    split_run run = {.o = o, .ds = &ds, .sel = sel, .set = set, .thumbs = *thumbs, .sheets = *sheets, .font = font,
                     .model = model, .grid_h = grid_h, .grid_w = grid_w, .total = n, .rc = rc, .err = err};
    if (!rc) progress(&run);
    if (!rc && o->features) caption_features(&run, &fc, &bo, n);
    else if (!rc) {
        cap.beam = bo;
        caption_photos(&run, &cap, n);
    }
    rc = run.rc;
    if (!rc && subtitle) {
        char b[1024];
        snprintf(b, sizeof b, "%s, data %s, split %s, beam %d", enc_name, o->data, o->split, bo.beam);
        *subtitle = ac_strdup(b);
    }
    ac_font_free(font);
    if (o->features) {
        ac_model_free(&model_only);
        ac_features_free(&fc);
    } else {
        ac_captioner_free(&cap);
    }
    free(sel);
    ac_dataset_free(&ds);
    return rc;
}

