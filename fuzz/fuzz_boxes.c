/* fuzz/fuzz_boxes.c: libFuzzer target for the hand-drawn box files of attncap ground. Whatever parses
 * must hold only boxes inside the unit square with positive size, and the geometry on them must stay
 * in range: area in [0, 1], an even attention map's mass equal to the area, a peaked map's mass in
 * [0, 1]. Seeds: fuzz/corpus/boxes. Replayed by tests/test_fuzz_regress.c. */
#include "fuzz_main.h"
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "attncap/grounding.h"

static int fuzz_boxes(const uint8_t *data, size_t size) {
    ac_ground_set set;
    ac_err err;
    if (ac_ground_parse((const char *)data, size, "fuzz.tsv", &set, &err)) return 0;
    float even[7 * 7], peak[7 * 7] = {0};
    for (int i = 0; i < 49; i++) even[i] = 1.0f / 49;
    peak[24] = 0.75f, peak[0] = 0.25f;
    for (int o = 0; o < set.n; o++) {
        const ac_ground_object *ob = &set.obj[o];
        if (!ob->photo || !ob->photo[0] || ob->n_words < 1 || ob->n_boxes < 1) abort();
        for (int b = 0; b < ob->n_boxes; b++) {
            const ac_box *x = &ob->boxes[b];
            if (!(x->x0 >= 0 && x->x1 <= 1 && x->y0 >= 0 && x->y1 <= 1 && x->x0 < x->x1 && x->y0 < x->y1)) abort();
        }
        double area = ac_ground_area(ob->boxes, ob->n_boxes);
        double m_even = ac_ground_mass(even, 7, 7, ob->boxes, ob->n_boxes);
        double m_peak = ac_ground_mass(peak, 7, 7, ob->boxes, ob->n_boxes);
        double chance = ac_ground_hit_chance(7, 7, ob->boxes, ob->n_boxes);
        if (!(area > 0 && area <= 1 + 1e-9) || fabs(m_even - area) > 1e-5 || !(m_peak >= 0 && m_peak <= 1 + 1e-6) ||
            !(chance > 0 && chance <= 1))
            abort();
        (void)ac_ground_hit(peak, 7, 7, ob->boxes, ob->n_boxes);
    }
    ac_ground_free(&set);
    return 0;
}

AC_FUZZ_MAIN(fuzz_boxes, "", "")
