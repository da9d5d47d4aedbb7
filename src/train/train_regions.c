/* train_regions.c: the regions (regions.h) of the training photos and of the captions without photos.
 *
 * Photos: each feature row's detections come from `attncap detect --json` lines (o->detections), the
 * photo found by file name; a "#flip" row gets its photo's regions mirrored. They are chosen exactly
 * as the captioner chooses them (ac_regions_from_detections with the model's region_min_score and
 * regions), so training and captioning see the same vectors.
 * Captions without photos: the COCO objects the caption names (objects.h) become pseudo-regions over
 * the no-photo context x: x + s * region_scale * code(k), s drawn uniformly from [0.3, 1], after
 * TEXT_CONTEXT_ROWS copies of x (so a region competes for the attention as a photo's region competes
 * with the photo's cells, instead of taking it for want of anything else: with one copy of x the
 * model trained on text attended to regions and on photos hardly looked at them); each is
 * dropped with probability 1/6 and a wrong category at s in [0.1, 0.4] is added with probability
 * 1/4, so the decoder learns to name what the regions say, and to doubt a weak one. The draws are a
 * hash of (seed, caption): the same batch gets the same regions on a resumed run. */
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

void ac_train_text_regions(const ac_trainer *tr, const ac_train_example *e, uint64_t seed, float *ann, int *n_valid,
                           int *n_regions, unsigned char *cat, float *score) {
    const int D = tr->D, M = tr->Lg < TEXT_CONTEXT_ROWS ? tr->Lg : TEXT_CONTEXT_ROWS;
    uint64_t s = seed;
    int n = 0;
    float code[AC_REGION_MAX_DIM];
    for (int m = 0; m < M; m++) memcpy(ann + (size_t)m * D, tr->null_ctx, sizeof(float) * (size_t)D);
    for (int k = 0; k <= e->n_obj && n < tr->R; k++) {
        int category;
        float drawn; /* the pseudo-detection's score */
        if (k < e->n_obj) {
            if (unit(&s) < 1.0f / 6.0f) continue;
            category = e->obj[k], drawn = 0.3f + 0.7f * unit(&s);
        } else { /* a wrong category, weakly */
            if (unit(&s) >= 0.25f) continue;
            category = (int)(unit(&s) * AC_N_OBJECTS) % AC_N_OBJECTS, drawn = 0.1f + 0.3f * unit(&s);
            int named = 0;
            for (int j = 0; j < e->n_obj; j++) named |= e->obj[j] == category;
            if (named) continue;
        }
        float *row = ann + (size_t)(M + n) * D;
        ac_region_code(category, D, code);
        for (int d = 0; d < D; d++) row[d] = tr->null_ctx[d] + drawn * tr->region_scale * code[d];
        score[n] = drawn, cat[n++] = (unsigned char)category;
    }
    *n_valid = M + n, *n_regions = n;
}
