/* test_tag_precision.c: each tag word's precision curve (tag_precision.h) against checks written here:
 * the penalized log-likelihood and its gradient recomputed from the formula (zero at the fit, lower at
 * every nudged point), recovery of known curves from simulated tags, the posterior sd against the
 * curvature recomputed, shrinkage of a word seen once, JSON round trip and hostile input. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/tag_precision.h"
#include "test.h"

static double urand(unsigned long long *s) {
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(*s >> 11) / 9007199254740992.0;
}

static double sig(double z) { return 1 / (1 + exp(-z)); }
static double lgt(double p) { return log(p / (1 - p)); }

enum { W = 4 };
static const char *const WORDS[W] = {"robe", "bike", "dog", "zebra"}; /* zebra: never observed */

/* n tags of words 0..2 with true offsets u_true and curve a + b logit(p). */
static ac_tag_obs *simulate(int n, double a, double b, const double *u_true, unsigned long long seed) {
    ac_tag_obs *o = malloc(sizeof *o * (size_t)n);
    unsigned long long s = seed;
    for (int i = 0; i < n; i++) {
        o[i].word = (int)(urand(&s) * 3);
        o[i].prob = 0.2 + 0.79 * urand(&s);
        o[i].named = urand(&s) < sig(a + b * lgt(o[i].prob) + u_true[o[i].word]);
    }
    return o;
}

/* The objective the fit maximizes, written out: sum log P - lambda / 2 sum u^2 - 1e-6 n / 2 (a^2 + b^2)
 * (the last keeps a, b finite should the scores separate the labels). */
static double objective(const ac_tag_obs *o, int n, double a, double b, const double *u, double lambda) {
    double s = -1e-6 * n / 2 * (a * a + b * b);
    for (int i = 0; i < n; i++) {
        const double p = sig(a + b * lgt(o[i].prob) + u[o[i].word]);
        s += log(o[i].named ? p : 1 - p);
    }
    for (int w = 0; w < W; w++) s -= lambda / 2 * u[w] * u[w];
    return s;
}

static void offsets(const ac_tag_precision *tp, double *u) {
    for (int w = 0; w < W; w++) {
        const ac_tag_precision_word *e = ac_tag_precision_find(tp, WORDS[w]);
        u[w] = e ? e->u : 0;
    }
}

/* At the fit the gradient of the objective (recomputed here) vanishes, and nudging any parameter
 * lowers the objective. */
static void test_fit_is_the_maximum(void) {
    enum { N = 3000 };
    const double ut[3] = {-2.5, 2, 0.3};
    ac_tag_obs *o = simulate(N, -1, 1.2, ut, 5);
    ac_tag_precision tp;
    ac_err err;
    CHECKF(ac_tag_precision_fit(WORDS, W, o, N, 1.0, &tp, &err) == 0, "%s", err.msg);
    double u[W];
    offsets(&tp, u);
    double ga = -1e-6 * N * tp.a, gb = -1e-6 * N * tp.b, gu[W] = {0};
    for (int i = 0; i < N; i++) {
        const double x = lgt(o[i].prob), r = o[i].named - sig(tp.a + tp.b * x + u[o[i].word]);
        ga += r, gb += r * x, gu[o[i].word] += r;
    }
    for (int w = 0; w < W; w++) gu[w] -= 1.0 * u[w];
    CHECKF(fabs(ga) < 1e-6 && fabs(gb) < 1e-6, "gradient a %g b %g", ga, gb);
    for (int w = 0; w < W; w++) CHECKF(fabs(gu[w]) < 1e-6, "gradient u[%d] %g", w, gu[w]);
    const double best = objective(o, N, tp.a, tp.b, u, 1.0);
    for (int k = 0; k < 2 + W; k++)
        for (int sgn = -1; sgn <= 1; sgn += 2) {
            double a = tp.a, b = tp.b, v[W];
            memcpy(v, u, sizeof v);
            const double d = sgn * 1e-2;
            if (k == 0) a += d;
            else if (k == 1) b += d;
            else v[k - 2] += d;
            CHECKF(objective(o, N, a, b, v, 1.0) < best, "nudging parameter %d by %g raises the objective", k, d);
        }
    CHECK(tp.n_obs == N && tp.n_words == 3 && !ac_tag_precision_find(&tp, "zebra")); /* observed words only */
    ac_tag_precision_free(&tp);
    free(o);
}

/* Many tags and a weak prior: the simulated curve comes back; the sd is the curvature's, recomputed. */
static void test_recovers_curves(void) {
    enum { N = 120000 };
    const double ut[3] = {-2, 1.5, 0.5};
    ac_tag_obs *o = simulate(N, -0.8, 1.1, ut, 9);
    ac_tag_precision tp;
    ac_err err;
    CHECK(ac_tag_precision_fit(WORDS, W, o, N, 0.01, &tp, &err) == 0);
    /* a and the u's are identified only up to a shared shift, which the prior pins: compare a + u */
    double u[W];
    offsets(&tp, u);
    CHECK_NEAR(tp.b, 1.1, 0.05);
    for (int w = 0; w < 3; w++) CHECK_NEAR(tp.a + u[w], -0.8 + ut[w], 0.08);
    for (int w = 0; w < 3; w++) {
        double h = tp.lambda;
        for (int i = 0; i < N; i++)
            if (o[i].word == w) {
                const double p = sig(tp.a + tp.b * lgt(o[i].prob) + u[w]);
                h += p * (1 - p);
            }
        CHECK_NEAR(ac_tag_precision_find(&tp, WORDS[w])->sd, 1 / sqrt(h), 1e-9);
    }
    /* the precision is the formula; the bound is u raised by z sd; an unseen word is on the shared curve
     * with sd 1 / sqrt(lambda) */
    CHECK_NEAR(ac_tag_precision_of(&tp, "robe", 0.7), sig(tp.a + tp.b * lgt(0.7) + u[0]), 1e-12);
    const double sd = ac_tag_precision_find(&tp, "robe")->sd;
    CHECK_NEAR(ac_tag_precision_bound(&tp, "robe", 0.7, 2), sig(tp.a + tp.b * lgt(0.7) + u[0] + 2 * sd), 1e-12);
    CHECK_NEAR(ac_tag_precision_of(&tp, "zebra", 0.4), sig(tp.a + tp.b * lgt(0.4)), 1e-12);
    CHECK_NEAR(ac_tag_precision_bound(&tp, "zebra", 0.4, 1.5), sig(tp.a + tp.b * lgt(0.4) + 1.5 / sqrt(0.01)), 1e-12);
    CHECK(ac_tag_precision_of(&tp, "bike", 0.5) > ac_tag_precision_of(&tp, "dog", 0.5));
    CHECK(ac_tag_precision_of(&tp, "dog", 0.5) > ac_tag_precision_of(&tp, "robe", 0.5));
    ac_tag_precision_free(&tp);
    free(o);
}

/* A word seen once, unnamed, among many: the prior keeps it near the shared curve (its u is the
 * one-dimensional maximum of its own terms, found here by bisection on the derivative). */
static void test_shrinks_rare_word(void) {
    enum { N = 2001 };
    const double ut[3] = {0, 0, 0};
    ac_tag_obs *o = simulate(N, -0.5, 1, ut, 13);
    for (int i = 0; i < N - 1; i++) o[i].word = 2; /* all dog */
    o[N - 1] = (ac_tag_obs){0, 0.5, 0};            /* one robe at 0.5, not named */
    ac_tag_precision tp;
    ac_err err;
    CHECK(ac_tag_precision_fit(WORDS, W, o, N, 1.0, &tp, &err) == 0);
    const double x0 = tp.a + tp.b * lgt(0.5);
    double lo = -20, hi = 20; /* d/du [log(1 - sig(x0 + u)) - u^2 / 2] = -sig(x0 + u) - u */
    for (int it = 0; it < 200; it++) {
        const double mid = (lo + hi) / 2;
        if (-sig(x0 + mid) - mid > 0) lo = mid;
        else hi = mid;
    }
    const ac_tag_precision_word *e = ac_tag_precision_find(&tp, "robe");
    CHECK(e && e->fired == 1 && e->named == 0);
    CHECK_NEAR(e->u, lo, 1e-6);
    CHECK(e->u < 0 && e->u > -1); /* pulled down a little, not to "never named" */
    ac_tag_precision_free(&tp);
    free(o);
}

static void test_json_and_hostile(void) {
    const double ut[3] = {-1, 1, 0};
    ac_tag_obs *o = simulate(500, -0.5, 1, ut, 21);
    ac_tag_precision tp, r;
    ac_err err;
    CHECK(ac_tag_precision_fit(WORDS, W, o, 500, 2.0, &tp, &err) == 0);
    char *j = ac_tag_precision_to_json(&tp);
    CHECK(j && ac_tag_precision_from_json(j, &r, &err) == 0);
    free(j);
    CHECKF(r.a == tp.a && r.b == tp.b && r.lambda == 2.0 && r.n_obs == 500 && r.n_words == tp.n_words, "%.17g %.17g, %.17g %.17g, %g %d %d %d", r.a, tp.a, r.b, tp.b, r.lambda, r.n_obs, r.n_words, tp.n_words);
    for (int i = 0; i < r.n_words; i++)
        CHECK(!strcmp(r.words[i].word, tp.words[i].word) && r.words[i].fired == tp.words[i].fired &&
              r.words[i].named == tp.words[i].named && r.words[i].u == tp.words[i].u && r.words[i].sd == tp.words[i].sd);
    CHECK(ac_tag_precision_of(&r, "bike", 0.3) == ac_tag_precision_of(&tp, "bike", 0.3));
    ac_tag_precision_free(&r);
    static const char *const bad[] = {
        "not json", "{}", "{\"a\":1,\"b\":1,\"lambda\":1,\"n\":0,\"words\":{}}",
        "{\"a\":1,\"b\":1,\"lambda\":1,\"n\":5,\"words\":[]}",
        "{\"a\":\"x\",\"b\":1,\"lambda\":1,\"n\":5,\"words\":{}}",
        "{\"a\":1,\"b\":1,\"lambda\":1,\"n\":5,\"words\":{\"robe\":[3,4,0.1,1]}}",   /* named > fired */
        "{\"a\":1,\"b\":1,\"lambda\":1,\"n\":5,\"words\":{\"robe\":[3,1,0.1,0]}}",   /* sd 0 */
        "{\"a\":1,\"b\":1,\"lambda\":1,\"n\":5,\"words\":{\"robe\":[3,1,0.1]}}",     /* no sd */
        "{\"a\":1,\"b\":1,\"lambda\":1,\"n\":5,\"words\":{\"robe\":[3.5,1,0.1,1]}}", /* not a count */
        "{\"a\":1,\"b\":1,\"lambda\":1,\"n\":5,\"words\":{\"robe\":[3,1,0.1,1],\"robe\":[2,1,0,1]}}",
        "{\"a\":1,\"b\":1,\"lambda\":1,\"n\":5,\"words\":{\"\":[3,1,0.1,1]}}",
        "{\"a\":1e999,\"b\":1,\"lambda\":1,\"n\":5,\"words\":{}}"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        CHECKF(ac_tag_precision_from_json(bad[i], &r, &err) != 0, "accepted %s", bad[i]);
        CHECK(r.n_words == 0 && r.words == NULL);
    }
    /* fit refusals */
    ac_tag_obs same[2] = {{0, 0.5, 1}, {1, 0.6, 1}};
    CHECK(ac_tag_precision_fit(WORDS, W, same, 2, 1, &r, &err) != 0 && strstr(err.msg, "both"));
    ac_tag_obs out_of_range[2] = {{0, 0.5, 1}, {7, 0.6, 0}}, zero_p[2] = {{0, 0, 1}, {1, 0.6, 0}};
    CHECK(ac_tag_precision_fit(WORDS, W, out_of_range, 2, 1, &r, &err) != 0);
    CHECK(ac_tag_precision_fit(WORDS, W, zero_p, 2, 1, &r, &err) != 0);
    CHECK(ac_tag_precision_fit(WORDS, W, o, 500, 0, &r, &err) != 0);
    CHECK(ac_tag_precision_fit(WORDS, W, o, 500, NAN, &r, &err) != 0);
    /* not fitted: no precision */
    ac_tag_precision none = {0};
    CHECK(isnan(ac_tag_precision_of(&none, "robe", 0.5)) && isnan(ac_tag_precision_of(NULL, "robe", 0.5)));
    ac_tag_precision_free(&tp);
    free(o);
}

int main(void) {
    RUN(test_fit_is_the_maximum);
    RUN(test_recovers_curves);
    RUN(test_shrinks_rare_word);
    RUN(test_json_and_hostile);
    return TEST_EXIT();
}
