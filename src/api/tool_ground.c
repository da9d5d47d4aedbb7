/* tool_ground.c: the tool "ground" (tool_internal.h; `attncap ground`): does the attention for "dog" sit
 * on the dog? Scores a model against hand-drawn boxes or the detector's: each photo captioned, every word
 * of the caption (and with "data" of its references, teacher-forced) that names one of its objects
 * scored by the pointing game and the attention's mass inside the object, per object class. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/captioner.h"
#include "attncap/dataset.h"
#include "attncap/grounding.h"
#include "attncap/tokenize.h"
#include "alloc_internal.h"
#include "tool_internal.h"

typedef struct ground_opts {
    const char *boxes, *root, *data, *model, *encoder, *detector, *precision;
    int beam, threads, head, verbose, json;
} ground_opts;

#define TXT(k) {#k, OPTION_TEXT, offsetof(ground_opts, k), 0, 0}
#define INT(k, lo, hi) {#k, OPTION_INT, offsetof(ground_opts, k), lo, hi}
#define SWITCH(k) {#k, OPTION_SWITCH, offsetof(ground_opts, k), 0, 1}
static const option OPTIONS[] = {
    TXT(boxes), TXT(root), TXT(data), TXT(model), TXT(encoder), TXT(detector), TXT(precision),
    INT(beam, 1, 100), INT(threads, 1, 256), INT(head, 1, 64), SWITCH(verbose), SWITCH(json),
};
#undef TXT
#undef INT
#undef SWITCH

static void defaults(void *state) { ((ground_opts *)state)->root = "."; }

typedef struct {
    long n, hits, n_other, undetected;
    double mass, area, chance, other; /* other: attention in the object of the caption's other words */
} tally;

typedef struct { const char *name; int photos, named; tally gen, ref; } klass; /* an object class's rows */

static void tally_add(tally *t, double mass, double area, int hit, double chance) {
    t->n++, t->hits += hit, t->mass += mass, t->area += area, t->chance += chance;
}

static void tally_merge(tally *dst, const tally *src) {
    dst->n += src->n, dst->hits += src->hits, dst->n_other += src->n_other, dst->undetected += src->undetected;
    dst->mass += src->mass, dst->area += src->area, dst->chance += src->chance, dst->other += src->other;
}

static void print_row(ac_tool *out, const klass *k, int json, int detected) {
    if (json) {
        ac_tool_printf(out, "{\"object\": \"%s\", \"photos\": %d, \"named\": %d", k->name, k->photos, k->named);
        for (int s = 0; s < 2; s++) {
            const tally *t = s ? &k->ref : &k->gen;
            double n = t->n ? (double)t->n : 1;
            ac_tool_printf(out, ", \"%s\": {\"n\": %ld, \"hit\": %.4f, \"chance\": %.4f, \"mass\": %.4f, \"others\": %.4f, "
                   "\"area\": %.4f",
                   s ? "references" : "generated", t->n, t->hits / n, t->chance / n, t->mass / n,
                   t->other / (t->n_other ? (double)t->n_other : 1), t->area / n);
            if (detected) ac_tool_printf(out, ", \"undetected\": %ld", t->undetected);
            ac_tool_printf(out, "}");
        }
        ac_tool_printf(out, "}\n");
        return;
    }
    ac_tool_printf(out, "%-13s %6d %5d", k->name, k->photos, k->named);
    for (int s = 0; s < 2; s++) {
        const tally *t = s ? &k->ref : &k->gen;
        if (t->n)
            ac_tool_printf(out, " | %5ld %5.2f %6.2f %5.2f %6.2f %5.2f", t->n, t->hits / (double)t->n, t->chance / t->n,
                   t->mass / t->n, t->other / (t->n_other ? t->n_other : 1), t->area / t->n);
        else ac_tool_printf(out, " | %5d %5s %6s %5s %6s %5s", 0, "-", "-", "-", "-", "-");
        if (detected) ac_tool_printf(out, " %5ld", t->undetected);
    }
    ac_tool_printf(out, "\n");
}

/* Scores every word of `toks` that names one of the objects of the photo whose first object is
 * `first`; att: the words' attention (n + 1 rows). A detected object without boxes (the detector
 * did not find it) is counted and reported for each word naming it, not scored. */
static void score_words(ac_tool *out, const ac_ground_set *set, int first, const char *const *toks, int n,
                        const ac_ground_attention *att, klass *cls, const int *cls_of, int reference, int verbose,
                        int *named) {
    const char *src = reference ? "ref" : "gen";
    for (int o = first; o < set->n; o++) {
        const ac_ground_object *obj = &set->obj[o];
        if (strcmp(obj->photo, set->obj[first].photo)) continue;
        tally *t = reference ? &cls[cls_of[o]].ref : &cls[cls_of[o]].gen;
        int names_it = 0;
        for (int k = 0; k < n && !names_it; k++) names_it = ac_ground_names(obj, toks[k]);
        if (!names_it) continue;
        const double area = ac_ground_area(obj->boxes, obj->n_boxes);
        const double chance = ac_ground_hit_chance(att->grid_h, att->grid_w, obj->boxes, obj->n_boxes);
        for (int k = 0; k < n; k++) {
            const int names = ac_ground_names(obj, toks[k]);
            if (!obj->n_boxes) { /* detected mode: the detector did not find it */
                if (names && ++t->undetected && verbose)
                    ac_tool_printf(out, "%s\t%s\t%s\t%s\tnot detected\n", obj->photo, obj->words[0], src, toks[k]);
                continue;
            }
            double mass = ac_ground_row_mass(att, k, obj->boxes, obj->n_boxes);
            if (!names) {
                t->n_other++, t->other += mass;
                continue;
            }
            int hit = ac_ground_row_hit(att, k, obj->boxes, obj->n_boxes);
            tally_add(t, mass, area, hit, chance);
            if (named) named[o - first] = 1;
            if (verbose)
                ac_tool_printf(out, "%s\t%s\t%s\t%s\t%.4f\t%.4f\t%d\n", obj->photo, obj->words[0], src, toks[k], mass, area, hit);
        }
    }
}

static const ac_ds_image *find_refs(const ac_dataset *ds, const char *photo) {
    const char *slash = strrchr(photo, '/');
    const char *key = slash ? slash + 1 : photo;
    for (int i = 0; ds && i < ds->n; i++)
        if (!strcmp(ds->images[i].key, key)) return &ds->images[i];
    return NULL;
}

/* --boxes detected: each photo's detected objects into set (ac_ground_detect); a photo that cannot be
 * read is reported and counted in *failed. -1 when the detector cannot be opened. */
static int detect_photos(ac_tool *t, const char *det_flag, const char *root, char **photos, int n,
                         ac_ground_set *set, int *failed, ac_err *err) {
    ac_detector *det = NULL;
    if (ac_detector_open(det_flag, NULL, &det, err)) return -1;
    for (int i = 0; i < n; i++) {
        char *path = photos[i][0] == '/' ? ac_strdup(photos[i]) : ac_path_join(root, photos[i]);
        if (!path || ac_ground_detect(det, path, photos[i], set, err))
            ac_tool_note(t, "%s", path ? err->msg : "out of memory"), (*failed)++;
        free(path);
    }
    ac_detector_close(det);
    return 0;
}

/* What cannot go together, before anything is read. */
static int check_options(const ground_opts *o, int n_photos, ac_err *err) {
    const int detected = o->boxes && !strcmp(o->boxes, "detected");
    if (!o->boxes) return ac_errc(err, AC_ERR_OPTIONS, "the option boxes (a file, or detected) is required");
    if (detected && !n_photos) return ac_errc(err, AC_ERR_OPTIONS, "boxes detected needs photos");
    if (!detected && n_photos) return ac_errc(err, AC_ERR_OPTIONS, "photos are given with boxes detected only");
    if (o->detector && !detected) return ac_errc(err, AC_ERR_OPTIONS, "the option detector is for boxes detected");
    return 0;
}

static int run(ac_tool *t, void *state, ac_err *err) {
    const ground_opts *opt = state;
    if (check_options(opt, t->n_items[0], err)) return -1;
    const int detected = !strcmp(opt->boxes, "detected"), verbose = opt->verbose;
    const char *root = opt->root;
    ac_precision precision;
    ac_ground_set set = {0};
    ac_dataset ds = {0};
    ac_captioner cap = {0};
    klass *cls = NULL;
    int *cls_of = NULL, *named = NULL, n_cls = 0, failed = 0, rc = -1;
    if ((detected ? detect_photos(t, opt->detector, root, t->items[0], t->n_items[0], &set, &failed, err)
                  : ac_ground_load(opt->boxes, &set, err)) ||
        (opt->data && ac_dataset_load(opt->data, NULL, &ds, err)) ||
        ac_captioner_init(&cap, opt->model, opt->encoder, opt->threads, err) ||
        ac_precision_parse(opt->precision ? opt->precision : ac_default_precision(), &precision, err) ||
        ac_encoder_set_precision(&cap.enc, ac_encoder_id_precision(&cap.id, precision), err) ||
        (opt->head && ac_decoder_show_head(&cap.model.dec, opt->head, err)))
        goto done;
    rc = 0;
    if (!set.n) goto done; /* boxes detected: no photo could be read (each a note) */
    if (opt->beam) cap.beam.beam = opt->beam;
    cls = ac_calloc((size_t)set.n, sizeof *cls);
    cls_of = ac_malloc((size_t)set.n * sizeof *cls_of);
    named = ac_calloc((size_t)set.n, sizeof *named);
    if (!cls || !cls_of || !named) {
        rc = ac_errf(err, "out of memory");
        goto done;
    }
    for (int o = 0; o < set.n; o++) {
        int k = 0;
        while (k < n_cls && strcmp(cls[k].name, set.obj[o].words[0])) k++;
        if (k == n_cls) cls[n_cls++].name = set.obj[o].words[0];
        cls_of[o] = k;
    }
    int n_photos = 0;
    for (int o = 0; o < set.n; o++) n_photos += ac_ground_first_of_photo(&set, o);
    ac_tool_progress(t, 0, n_photos);
    int done_photos = 0;
    for (int o = 0; o < set.n; o++) {
        const char *photo = set.obj[o].photo;
        if (!ac_ground_first_of_photo(&set, o)) continue;
        char *path = photo[0] == '/' ? ac_strdup(photo) : ac_path_join(root, photo);
        ac_image img = {0};
        ac_caption c = {0};
        int mw, mh; /* read as attncap caption reads it (ac_encoder_min_photo) */
        ac_encoder_min_photo(&cap.enc, &mw, &mh);
        int loaded = path && ac_image_load_min(path, mw, mh, &img, err) == 0; /* its errors name the file */
        if (!loaded || ac_captioner_run(&cap, &img, &c, NULL, NULL, err)) {
            if (!path) ac_tool_note(t, "out of memory");
            else if (!loaded) ac_tool_note(t, "%s", err->msg);
            else ac_tool_note(t, "%s: %s", path, err->msg);
            failed++;
            free(path), ac_image_free(&img);
            continue;
        }
        free(path);
        ac_image_free(&img);
        /* the caption's words as strings, to match the object's words */
        const char **toks = ac_malloc(((size_t)c.n + 1) * sizeof *toks);
        for (int k = 0; toks && k < c.n; k++) toks[k] = ac_caption_word(&c, cap.model.vocab, k);
        memset(named, 0, (size_t)set.n * sizeof *named);
        /* the photo's own grid (the model's unless its encoder keeps the aspect ratio) */
        const int gh = c.grid_h ? c.grid_h : cap.grid_h, gw = c.grid_w ? c.grid_w : cap.grid_w;
        /* a model with regions: its rows are the cells, then the regions (ac_ground_row_mass) */
        const ac_ground_attention att = {c.alpha, gh, gw, c.regions ? c.n_regions : 0, c.regions};
        if (toks && (c.regions || !c.n_regions)) score_words(t, &set, o, toks, c.n, &att, cls, cls_of, 0, verbose, named);
        for (int p = o; p < set.n; p++)
            if (!strcmp(set.obj[p].photo, photo) && set.obj[p].n_boxes)
                cls[cls_of[p]].photos++, cls[cls_of[p]].named += named[p - o];
        if (verbose && toks) {
            ac_tool_printf(t, "%s\tcaption\t", photo);
            for (int k = 0; k < c.n; k++) ac_tool_printf(t, "%s%s", k ? " " : "", toks[k]);
            ac_tool_printf(t, "\n");
        }
        free(toks);
        ac_caption_free(&c);
        const ac_ds_image *refs = find_refs(opt->data ? &ds : NULL, photo);
        for (int r = 0; refs && r < refs->n_caps; r++) {
            ac_tokens tk = {0};
            if (ac_tokenize(refs->caps[r], &tk, err)) continue; /* a malformed reference scores nothing */
            int *ids = ac_malloc(((size_t)tk.n + 1) * sizeof *ids);
            ac_caption forced = {0};
            if (ids) {
                ac_vocab_encode(cap.model.vocab, &tk, ids);
                if (!ac_caption_forced_grid(&cap.model.dec, cap.ann, gh, gw, ids, tk.n, &forced, err)) {
                    const ac_ground_attention fatt = {forced.alpha, gh, gw, 0, NULL}; /* the grid alone */
                    score_words(t, &set, o, (const char *const *)tk.tok, tk.n, &fatt, cls, cls_of, 1, verbose, NULL);
                }
            }
            free(ids);
            ac_caption_free(&forced);
            ac_tokens_free(&tk);
        }
        ac_tool_progress(t, ++done_photos, n_photos);
    }
    klass all = {.name = "all"};
    for (int k = 0; k < n_cls; k++) {
        all.photos += cls[k].photos, all.named += cls[k].named;
        tally_merge(&all.gen, &cls[k].gen);
        tally_merge(&all.ref, &cls[k].ref);
    }
    const char *undet = detected ? " undet" : ""; /* its column in the table */
    if (!opt->json)
        ac_tool_printf(t, "%-13s %6s %5s | %5s %5s %6s %5s %6s %5s%s | %5s %5s %6s %5s %6s %5s%s\n%-13s %12s | %*s | %*s\n",
               "object", "photos", "named", "n", "hit", "chance", "mass", "others", "area", undet, "n", "hit", "chance",
               "mass", "others", "area", undet, "", "", detected ? 43 : 37, "generated captions", detected ? 43 : 37,
               opt->data ? "reference captions" : "(no references)");
    for (int k = 0; k < n_cls; k++) /* detected: the categories found or named */
        if (!detected || cls[k].photos || cls[k].gen.undetected || cls[k].ref.undetected)
            print_row(t, &cls[k], opt->json, detected);
    print_row(t, &all, opt->json, detected);
done:
    free(cls), free(cls_of), free(named);
    ac_captioner_free(&cap);
    ac_dataset_free(&ds);
    ac_ground_free(&set);
    return rc;
}

static const tool_kind KIND = {"ground", OPTIONS, (int)(sizeof OPTIONS / sizeof OPTIONS[0]), {"photos", NULL},
                                  sizeof(ground_opts), defaults, run};
const tool_kind *ac_tool_ground_kind(void) { return &KIND; }
