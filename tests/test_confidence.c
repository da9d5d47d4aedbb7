/* test_confidence.c: Platt scaling against an exhaustive search of the likelihood, recovery of known
 * parameters from simulated labels, calibration error, JSON round trip and hostile input. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/confidence.h"
#include "test.h"

static double urand(unsigned long long *s) {
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(*s >> 11) / 9007199254740992.0;
}

/* The fit's likelihood is at least as good as the best point of a fine grid around it. */
static void test_fit_beats_grid(void) {
    enum { N = 400 };
    double x[N];
    int y[N];
    unsigned long long s = 7;
    for (int i = 0; i < N; i++) {
        x[i] = -3.0 + 2.5 * urand(&s); /* mean log-probabilities */
        y[i] = urand(&s) < 1.0 / (1.0 + exp(-(2.0 * x[i] + 3.0)));
    }
    ac_confidence c;
    ac_err err;
    CHECKF(ac_confidence_fit(x, y, N, &c, &err) == 0, "%s", err.msg);
    const double best = ac_confidence_nll(&c, x, y, N);
    double grid = INFINITY;
    for (double a = -2; a <= 6; a += 0.02)
        for (double b = -4; b <= 10; b += 0.02) {
            ac_confidence g = {a, b, N};
            const double v = ac_confidence_nll(&g, x, y, N);
            if (v < grid) grid = v;
        }
    CHECKF(best <= grid + 1e-9, "fit nll %.9f vs grid %.9f", best, grid);
}

static void test_recovers_parameters(void) {
    enum { N = 200000 };
    double *x = malloc(sizeof(double) * N);
    int *y = malloc(sizeof(int) * N);
    unsigned long long s = 11;
    for (int i = 0; i < N; i++) {
        x[i] = -4.0 + 4.0 * urand(&s);
        y[i] = urand(&s) < 1.0 / (1.0 + exp(-(1.5 * x[i] + 2.5)));
    }
    ac_confidence c;
    ac_err err;
    CHECK(ac_confidence_fit(x, y, N, &c, &err) == 0);
    CHECK_NEAR(c.a, 1.5, 0.05);
    CHECK_NEAR(c.b, 2.5, 0.1);
    CHECK(ac_confidence_ece(&c, x, y, N, 10) < 0.01); /* calibrated on its own data */
    ac_confidence off = {c.a, c.b + 2, N};
    CHECK(ac_confidence_ece(&off, x, y, N, 10) > 0.1); /* and a shifted one is not */
    free(x), free(y);
}

static void test_json_and_hostile(void) {
    ac_confidence c = {1.25, -0.5, 10}, r;
    ac_err err;
    char *j = ac_confidence_to_json(&c);
    CHECK(j && ac_confidence_from_json(j, &r, &err) == 0 && r.a == c.a && r.b == c.b && r.n == 10);
    free(j);
    CHECK(ac_confidence_from_json("{\"a\":1}", &r, &err) != 0);
    CHECK(ac_confidence_from_json("not json", &r, &err) != 0);
    CHECK(ac_confidence_from_json("{\"a\":\"x\",\"b\":1}", &r, &err) != 0);
    double x[3] = {-1, -2, -3};
    int y1[3] = {1, 1, 1};
    CHECK(ac_confidence_fit(x, y1, 3, &c, &err) != 0 && strstr(err.msg, "both"));
    double xn[2] = {NAN, 1};
    int y2[2] = {0, 1};
    CHECK(ac_confidence_fit(xn, y2, 2, &c, &err) != 0);
    /* separable labels still give finite parameters */
    double xs[4] = {-3, -2.5, -1, -0.5};
    int ys[4] = {0, 0, 1, 1};
    CHECK(ac_confidence_fit(xs, ys, 4, &c, &err) == 0 && isfinite(c.a) && c.a > 0);
}

int main(void) {
    RUN(test_fit_beats_grid);
    RUN(test_recovers_parameters);
    RUN(test_json_and_hostile);
    return TEST_EXIT();
}
