/* Regions (regions.h): detections chosen and normalised, mirrored, and turned into annotation
 * vectors, checked against sums written out here cell by cell. */
#include <math.h>
#include <string.h>

#include "attncap/objects.h"
#include "attncap/regions.h"
#include "test.h"

enum { GH = 3, GW = 4, D = 1280 };

static void test_code(void) {
    static float a[D], b[D], a2[D];
    ac_region_code(ac_object_index("giraffe"), D, a);
    ac_region_code(ac_object_index("giraffe"), D, a2);
    ac_region_code(ac_object_index("kite"), D, b);
    double na = 0, dot = 0;
    for (int d = 0; d < D; d++) na += (double)a[d] * a[d], dot += (double)a[d] * b[d];
    CHECK_NEAR(na, 1.0, 1e-5);
    CHECK(!memcmp(a, a2, sizeof a));           /* a function of the category alone */
    CHECKF(fabs(dot) < 0.15, "giraffe . kite = %g", dot); /* nearly orthogonal (1/sqrt(D) ~ 0.03) */
    int worst_i = -1;
    double worst = 0;
    for (int i = 0; i < AC_N_OBJECTS; i++) { /* every pair of the 80 */
        static float c[D];
        ac_region_code(i, D, c);
        double d0 = 0;
        for (int d = 0; d < D; d++) d0 += (double)a[d] * c[d];
        if (i != ac_object_index("giraffe") && fabs(d0) > worst) worst = fabs(d0), worst_i = i;
    }
    CHECKF(worst < 0.15, "giraffe . %s = %g", ac_object_name(worst_i), worst);
}

static void test_from_detections(void) {
    const char *names[] = {"person", "zebra", "not a coco word", "giraffe"};
    ac_detection items[] = {{100, 50, 300, 250, 0.9f, 3}, {0, 0, 50, 50, 0.5f, 2}, {-10, 20, 420, 260, 0.4f, 0},
                            {10, 10, 20, 20, 0.1f, 1}};
    ac_detections d = {4, items, 400, 300};
    ac_region r[4];
    int n = ac_regions_from_detections(&d, names, 4, 0.2f, 10, r);
    CHECKF(n == 2, "%d regions", n); /* the unknown label and the one below 0.2 dropped */
    CHECK(r[0].category == ac_object_index("giraffe") && r[1].category == ac_object_index("person"));
    CHECK_NEAR(r[0].x0, 0.25, 1e-6);
    CHECK_NEAR(r[0].y1, 250.0 / 300, 1e-6);
    CHECK_NEAR(r[1].x0, 0.0, 1e-6); /* clipped to the photo */
    CHECK_NEAR(r[1].x1, 1.0, 1e-6);
    CHECK(ac_regions_from_detections(&d, names, 4, 0.2f, 1, r) == 1); /* at most max */
    ac_region f = r[0];
    ac_region_flip(&f);
    CHECK_NEAR(f.x0, 1 - r[0].x1, 1e-6);
    CHECK_NEAR(f.x1, 1 - r[0].x0, 1e-6);
    CHECK(f.y0 == r[0].y0);
}

static void test_vector(void) {
    static float grid[GH * GW * D], out[D], code[D];
    for (int i = 0; i < GH * GW * D; i++) grid[i] = (float)((i * 7919) % 101) / 101.0f;
    ac_region_code(5, D, code);
    /* cells' centres at x = (j + .5) / 4, y = (i + .5) / 3: this box holds cells (0,1), (0,2), (1,1), (1,2) */
    ac_region r = {0.2f, 0.1f, 0.7f, 0.55f, 0.8f, 5};
    ac_region_vector(grid, GH, GW, D, &r, 20.0f, out);
    double worst = 0;
    for (int d = 0; d < D; d++) {
        double mean = (grid[(0 * GW + 1) * D + d] + grid[(0 * GW + 2) * D + d] + grid[(1 * GW + 1) * D + d] +
                       grid[(1 * GW + 2) * D + d]) / 4.0;
        worst = fmax(worst, fabs(out[d] - (mean + 0.8 * 20.0 * code[d])));
    }
    CHECKF(worst < 1e-5, "pooled box: off by %g", worst);
    /* a box between cells' centres: the cell under its centre (row 2, column 3) */
    ac_region s = {0.80f, 0.70f, 0.85f, 0.75f, 0.5f, 5};
    ac_region_vector(grid, GH, GW, D, &s, 20.0f, out);
    worst = 0;
    for (int d = 0; d < D; d++) worst = fmax(worst, fabs(out[d] - (grid[(2 * GW + 3) * D + d] + 0.5 * 20.0 * code[d])));
    CHECKF(worst < 1e-5, "small box: off by %g", worst);
}

int main(void) {
    RUN(test_code);
    RUN(test_from_detections);
    RUN(test_vector);
    return TEST_EXIT();
}
