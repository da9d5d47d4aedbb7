/* train_regions.c: the regions (regions.h) of the training photos and of the captions without photos.
 *
 * Photos: each feature row's detections come from `attncap detect --json` lines (o->detections), the
 * photo found by file name; a "#flip" row gets its photo's regions mirrored. They are chosen exactly
 * as the captioner chooses them (ac_regions_from_detections with the model's region_min_score and
 * regions), so training and captioning see the same vectors.
 * Captions without photos: the COCO objects the caption names (objects.h) become pseudo-regions over
 * the no-photo context x: x + s * region_scale * code(k), after TEXT_CONTEXT_ROWS copies of x (so a
 * region competes for the attention as a photo's region competes with the photo's cells, instead of
 * taking it for want of anything else: with one copy of x the model trained on text attended to
 * regions and on photos hardly looked at them). The pseudo-regions imitate what the detector does on
 * the training photos, as measured over their captions (ac_train_text_regions_init): a named object
 * gets its region as often as a photo caption's named object has one, at the score of one drawn at
 * random; and the caption gets the regions that a photo caption drawn at random does not name (the
 * car behind the dog, the parasail taken for a kite), so the decoder learns that a region, even a
 * strong one, is not always said. Before (session 34) the objects were kept with probability 5/6 at
 * scores in [0.3, 1], and a wrong category at [0.1, 0.4] was added to a quarter of the captions: on
 * photos the model then named most strong regions (docs/experiments/regions.md). The draws are a hash
 * of (seed, caption): the same batch gets the same regions on a resumed run. */
#include <stdlib.h>
#include <string.h>

#include "attncap/objects.h"
#include "decoder_internal.h"
#include "train_internal.h"
#include "alloc_internal.h"

#define TEXT_CONTEXT_ROWS 32

int ac_train_regions_load(ac_trainer *tr, ac_err *err) {
    const ac_train_opts *o = tr->o;
    ac_rows_regions rr;
    int matched = 0;
    if (ac_rows_regions_load(o->detections, &tr->fc, tr->region_min, tr->R, &rr, &matched, err)) return -1;
    tr->reg = rr.regions, tr->n_reg = rr.n, tr->n_reg_photos = matched;
    if (matched == 0) return ac_errf(err, "%s: no photo of the feature cache %s has detections", o->detections, o->features);
    return 0;
}

void ac_train_photo_regions(const ac_trainer *tr, int row, int gh, int gw, float *ann, int *n_valid, int *n_regions,
                            unsigned char *cat, float *score) {
    const int D = tr->D, n = tr->n_reg[row];
    for (int k = 0; k < n; k++) {
        const ac_region *r = &tr->reg[(size_t)row * tr->R + k];
        ac_region_vector(ann, gh, gw, D, r, tr->region_scale, ann + (size_t)(gh * gw + k) * D);
        cat[k] = (unsigned char)r->category, score[k] = r->score;
    }
    *n_valid = gh * gw + n, *n_regions = n;
}

int ac_train_text_objects(const ac_tokens *t, unsigned char *obj) {
    char *joined = ac_tokens_join(t);
    uint8_t present[AC_N_OBJECTS];
    int n = 0;
    if (joined && ac_objects_in_tokens(joined, present) > 0)
        for (int k = 0; k < AC_N_OBJECTS && n < AC_TEXT_OBJECTS; k++)
            if (present[k]) obj[n++] = (unsigned char)k;
    free(joined);
    return n;
}

static float unit(uint64_t *s) {
    *s = ac_mix64(*s + 0x9E3779B97F4A7C15ull);
    return (float)((*s >> 40) * (1.0 / 16777216.0));
}

/* An index drawn uniformly from [0, n) (-1 when n is 0). */
static int draw_index(uint64_t *s, int n) {
    const int i = (int)(unit(s) * (float)n);
    return i >= n ? n - 1 : i;
}

static int names(const ac_train_example *e, int category) {
    for (int j = 0; j < e->n_obj; j++)
        if (e->obj[j] == category) return 1;
    return 0;
}

int ac_train_text_regions_init(ac_trainer *tr, ac_err *err) {
    long named = 0, found = 0, unnamed = 0;
    for (int pass = 0; pass < 2; pass++) {
        named = found = unnamed = 0;
        for (int i = 0; i < tr->n_ex; i++) {
            const ac_train_example *e = &tr->ex[i];
            const ac_region *reg = &tr->reg[(size_t)e->feat * tr->R];
            const int n = tr->n_reg[e->feat];
            if (pass) tr->unnamed_start[i] = (int)unnamed;
            for (int j = 0; j < e->n_obj; j++) {
                float best = -1; /* regions come best first */
                for (int k = 0; k < n && best < 0; k++)
                    if (reg[k].category == e->obj[j]) best = reg[k].score;
                named++;
                if (best >= 0 && pass) tr->named_score[found] = best;
                found += best >= 0;
            }
            for (int k = 0; k < n; k++)
                if (!names(e, reg[k].category)) {
                    if (pass) tr->unnamed_cat[unnamed] = (unsigned char)reg[k].category, tr->unnamed_score[unnamed] = reg[k].score;
                    unnamed++;
                }
        }
        if (pass) break;
        tr->named_score = ac_malloc(sizeof(float) * (size_t)(found + 1));
        tr->unnamed_cat = ac_malloc((size_t)unnamed + 1), tr->unnamed_score = ac_malloc(sizeof(float) * (size_t)(unnamed + 1));
        tr->unnamed_start = ac_malloc(sizeof(int) * ((size_t)tr->n_ex + 1));
        if (!tr->named_score || !tr->unnamed_cat || !tr->unnamed_score || !tr->unnamed_start) return ac_errf(err, "out of memory");
    }
    tr->unnamed_start[tr->n_ex] = (int)unnamed;
    tr->n_named_score = (int)found;
    tr->named_found = named ? (float)found / (float)named : 1.0f;
    return 0;
}

void ac_train_text_regions(const ac_trainer *tr, const ac_train_example *e, uint64_t seed, float *ann, int *n_valid,
                           int *n_regions, unsigned char *cat, float *score) {
    const int D = tr->D, M = tr->Lg < TEXT_CONTEXT_ROWS ? tr->Lg : TEXT_CONTEXT_ROWS;
    uint64_t s = seed;
    int n = 0;
    unsigned char cats[AC_TEXT_OBJECTS + AC_REGIONS_MAX];
    float scores[AC_TEXT_OBJECTS + AC_REGIONS_MAX];
    for (int k = 0; k < e->n_obj; k++) {
        if (unit(&s) >= tr->named_found) continue;
        const int j = draw_index(&s, tr->n_named_score);
        cats[n] = e->obj[k], scores[n++] = j >= 0 ? tr->named_score[j] : 1.0f;
    }
    const int i = draw_index(&s, tr->n_ex); /* a photo caption whose unnamed regions this caption gets */
    for (int k = tr->unnamed_start[i]; k < tr->unnamed_start[i + 1] && n < AC_TEXT_OBJECTS + AC_REGIONS_MAX; k++)
        if (!names(e, tr->unnamed_cat[k])) cats[n] = tr->unnamed_cat[k], scores[n++] = tr->unnamed_score[k];
    for (int a = 1; a < n; a++) { /* best first, as the captioner keeps a photo's, then the best R */
        const unsigned char c = cats[a];
        const float v = scores[a];
        int b = a - 1;
        while (b >= 0 && scores[b] < v) cats[b + 1] = cats[b], scores[b + 1] = scores[b], b--;
        cats[b + 1] = c, scores[b + 1] = v;
    }
    if (n > tr->R) n = tr->R;
    float code[AC_REGION_MAX_DIM];
    for (int m = 0; m < M; m++) memcpy(ann + (size_t)m * D, tr->null_ctx, sizeof(float) * (size_t)D);
    for (int k = 0; k < n; k++) {
        float *row = ann + (size_t)(M + k) * D;
        ac_region_code(cats[k], D, code);
        for (int d = 0; d < D; d++) row[d] = tr->null_ctx[d] + scores[k] * tr->region_scale * code[d];
        score[k] = scores[k], cat[k] = cats[k];
    }
    *n_valid = M + n, *n_regions = n;
}
