/* The pseudo-regions of captions without photos (src/train/train_regions.c): they imitate what the
 * detector did on the photo captions. Checked on a hand-made trainer whose statistics are counted
 * here by hand: P(a named object has its region), the pool of the named objects' scores, each photo
 * caption's unnamed regions; then over many draws, that the pseudo-regions keep a named object as often
 * as that (within 4 standard deviations), give it a score from the pool, add the unnamed regions of
 * each photo caption about equally often, never a category the caption names twice, best first, at
 * most SLOTS, and that each annotation vector is the no-photo context plus score x scale x code. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/objects.h"
#include "train_internal.h"
#include "test.h"

#define DIM 8
#define CELLS 4 /* grid cells: fewer than the text's context rows, so M = CELLS */
#define SLOTS 3
enum { PERSON = 0, DOG = 16, CAR = 2, FRISBEE = 29, KITE = 33 };

/* Photo 0: person 0.9, dog 0.8, car 0.7; photo 1: kite 0.6; photo 2: none. */
static ac_region regs[3 * SLOTS] = {
    {0, 0, 1, 1, 0.9f, PERSON}, {0, 0, 1, 1, 0.8f, DOG}, {0, 0, 1, 1, 0.7f, CAR}, {0, 0, 1, 1, 0.6f, KITE}};
static unsigned char n_regs[3] = {3, 1, 0};

/* The trainer above, its captions and its no-photo context. */
typedef struct fixture {
    ac_trainer tr;
    ac_train_example ex[4];
    float null_ctx[DIM];
} fixture;

/* f's trainer with its statistics measured; f->tr.unnamed_start is NULL if that failed. */
static void make(fixture *f) {
    ac_trainer *tr = &f->tr;
    ac_train_example *ex = f->ex;
    float *null_ctx = f->null_ctx;
    memset(f, 0, sizeof *f);
    /* caption 0 (photo 0): "a man and his dog": person, dog named; car unnamed
     * caption 1 (photo 0): "a dog": dog named; person, car unnamed
     * caption 2 (photo 1): "a kite and a frisbee": kite named (0.6), frisbee named without a region
     * caption 3 (photo 2): "a dog": named without a region */
    ex[0].feat = 0, ex[0].n_obj = 2, ex[0].obj[0] = PERSON, ex[0].obj[1] = DOG;
    ex[1].feat = 0, ex[1].n_obj = 1, ex[1].obj[0] = DOG;
    ex[2].feat = 1, ex[2].n_obj = 2, ex[2].obj[0] = KITE, ex[2].obj[1] = FRISBEE;
    ex[3].feat = 2, ex[3].n_obj = 1, ex[3].obj[0] = DOG;
    tr->ex = ex, tr->n_ex = 4, tr->reg = regs, tr->n_reg = n_regs, tr->R = SLOTS, tr->D = DIM, tr->Lg = CELLS, tr->L = CELLS + SLOTS;
    tr->region_scale = 60.0f;
    for (int d = 0; d < DIM; d++) null_ctx[d] = 0.25f * (float)d - 1.0f;
    tr->null_ctx = null_ctx;
    ac_err e;
    CHECKF(ac_train_text_regions_init(tr, &e) == 0, "%s", e.msg);
}

static void release(ac_trainer *tr) {
    free(tr->named_score), free(tr->unnamed_cat), free(tr->unnamed_score), free(tr->unnamed_start);
}

/* f made, or 0 (and nothing held) when its statistics could not be measured. */
static int ready(fixture *f) {
    make(f);
    if (f->tr.unnamed_start) return 1;
    release(&f->tr);
    return 0;
}

static void test_statistics(void) {
    fixture f;
    if (!ready(&f)) return;
    /* named: 6 (person, dog; dog; kite, frisbee; dog); with a region: person, dog, dog, kite */
    CHECK_NEAR(f.tr.named_found, 4.0 / 6.0, 1e-6);
    CHECK(f.tr.n_named_score == 4);
    float pool[4];
    memcpy(pool, f.tr.named_score, sizeof pool);
    int seen9 = 0, seen8 = 0, seen6 = 0;
    for (int k = 0; k < 4; k++) seen9 += pool[k] == 0.9f, seen8 += pool[k] == 0.8f, seen6 += pool[k] == 0.6f;
    CHECKF(seen9 == 1 && seen8 == 2 && seen6 == 1, "named scores %g %g %g %g", pool[0], pool[1], pool[2], pool[3]);
    /* unnamed: caption 0 car; caption 1 person, car; none for 2 and 3 */
    const int *start = f.tr.unnamed_start;
    CHECK(start[0] == 0 && start[1] == 1 && start[2] == 3 && start[3] == 3 && start[4] == 3);
    CHECK(f.tr.unnamed_cat[0] == CAR && f.tr.unnamed_score[0] == 0.7f);
    CHECK(f.tr.unnamed_cat[1] == PERSON && f.tr.unnamed_score[1] == 0.9f && f.tr.unnamed_cat[2] == CAR);
    release(&f.tr);
}

static void test_draws(void) {
    fixture f;
    if (!ready(&f)) return;
    /* a caption without a photo naming a dog and a giraffe (no photo caption names a giraffe) */
    ac_train_example t = {.feat = -1, .n_obj = 2, .obj = {DOG, 23}};
    const int N = 20000;
    static float ann[(CELLS + SLOTS) * DIM];
    long kept = 0, with_car = 0, with_person_unnamed = 0;
    int bad = 0;
    float code[DIM];
    for (int it = 0; it < N && !bad; it++) {
        int n_valid, n_reg;
        unsigned char cat[SLOTS];
        float score[SLOTS];
        ac_train_text_regions(&f.tr, &t, (uint64_t)it * 7919u + 1, ann, &n_valid, &n_reg, cat, score);
        if (n_reg > SLOTS || n_valid != CELLS + n_reg) bad = 1;
        int has_car = 0, has_person = 0, dogs = 0, giraffes = 0;
        for (int k = 0; k < n_reg; k++) {
            if (k && score[k] > score[k - 1]) bad = 2;
            if (cat[k] == DOG || cat[k] == 23) {
                dogs += cat[k] == DOG, giraffes += cat[k] == 23;
                if (score[k] != 0.9f && score[k] != 0.8f && score[k] != 0.6f) bad = 3;
            } else if (cat[k] == CAR) has_car++, bad = score[k] == 0.7f ? bad : 4;
            else if (cat[k] == PERSON) has_person++, bad = score[k] == 0.9f ? bad : 5;
            else bad = 6;
            ac_region_code(cat[k], DIM, code);
            for (int d = 0; d < DIM; d++)
                if (fabsf(ann[(CELLS + k) * DIM + d] - (f.null_ctx[d] + score[k] * 60.0f * code[d])) > 1e-4f) bad = 7;
        }
        for (int m = 0; m < CELLS; m++)
            if (memcmp(ann + m * DIM, f.null_ctx, sizeof f.null_ctx)) bad = 8;
        if (dogs > 1 || giraffes > 1 || has_car > 1 || has_person > 1) bad = 9;
        /* a person comes only with caption 1's set, which has a car too (only the best SLOTS = 3 are kept:
         * dog, giraffe, person and car cannot all be there) */
        if (has_person && !has_car && n_reg < SLOTS) bad = 10;
        kept += dogs + giraffes, with_car += has_car, with_person_unnamed += has_person;
    }
    CHECKF(!bad, "draw rule %d broken", bad);
    /* Expected, exactly: each named object is kept with p = 2/3 at a score drawn from {0.9, 0.8, 0.8,
     * 0.6}; caption 0's set (car 0.7) is drawn with 1/4, caption 1's (person 0.9, car 0.7) with 1/4.
     * Only caption 1's set with both named kept (1/4 * 4/9) makes 4 regions for SLOTS = 3: the lowest goes,
     * the car when both named scores are above 0.7 ((3/4)^2 = 9/16), else a named one (7/16). */
    const double p = 2.0 / 3.0, four = 0.25 * p * p;
    const double want_kept = 2 * p - four * 7.0 / 16.0, want_car = 0.5 - four * 9.0 / 16.0, want_person = 0.25;
    const double got_kept = (double)kept / N, got_car = (double)with_car / N, got_person = (double)with_person_unnamed / N;
    const double sd = sqrt(0.5 / N); /* each of the three: a per-draw variance of at most 0.5 */
    CHECKF(fabs(got_kept - want_kept) < 4 * sd, "named objects kept per caption %g, expected %g", got_kept, want_kept);
    CHECKF(fabs(got_car - want_car) < 4 * sd, "a car in %g of the draws, expected %g", got_car, want_car);
    CHECKF(fabs(got_person - want_person) < 4 * sd, "a person in %g of the draws, expected %g", got_person, want_person);
    release(&f.tr);
}

int main(void) {
    RUN(test_statistics);
    RUN(test_draws);
    return TEST_EXIT();
}
