/* test_expsum: the vectorised expf of src/base/expsum.c against the C library's expf itself, over
 * every one of the 2^32 floats (the same bits; a NaN for a NaN; under valgrind every 257th block of
 * them), and the softmax's two row
 * reductions built on it against the plain loops they replace (the sum of exp(x - m) in double, in
 * order; the maximum as "m = x[i] > m ? x[i] : m" finds it) on rows with ties, NaNs, infinities,
 * signed zeros and every length up to three vectors and a tail. */
#include <stdint.h>

#include "expsum_internal.h"
#include "test.h"

static uint32_t bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}
static float from_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static void every_float(void) {
    enum { B = 1 << 16 };
    float *x = malloc(sizeof(float) * B), *y = malloc(sizeof(float) * B);
    CHECK(x && y);
    uint64_t differ = 0, first = 0;
    float first_got = 0;
    /* under a wrapper (valgrind's emulation: hours for all of them) every 257th block of 2^16 */
    const char *wrapper = getenv("ATTNCAP_TEST_WRAPPER");
    const uint64_t stride = wrapper && *wrapper ? 257ull * B : B;
    for (uint64_t base = 0; base < (1ull << 32); base += stride) {
        for (int i = 0; i < B; i++) x[i] = from_bits((uint32_t)(base + (uint64_t)i));
        ac_exp_sum(x, B, 0.0f, y); /* y = expf(x - 0): x - 0 is x for every float, NaN and -0 too */
        for (int i = 0; i < B; i++) {
            const float want = expf(x[i]);
            const int same = isnan(want) ? isnan(y[i]) : bits(want) == bits(y[i]);
            if (!same && !differ++) first = base + (uint64_t)i, first_got = y[i];
        }
    }
    const float fx = from_bits((uint32_t)first);
    free(x), free(y);
    CHECKF(differ == 0, "%llu floats differ from expf, the first %a (0x%08x): %a, expf %a", (unsigned long long)differ,
           (double)fx, (unsigned)first, (double)first_got, (double)expf(fx));
}

static uint64_t rng = 88172645463325252ull;
static float frand(float lo, float hi) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return lo + (hi - lo) * (float)(rng >> 40) / 16777216.0f;
}

static void rows_as_the_loops(void) {
    enum { N = 3 * 16 + 7 };
    float x[N], out[N];
    for (int round = 0; round < 4000; round++) {
        const int n = 1 + round % N;
        for (int i = 0; i < n; i++) {
            x[i] = frand(-30, 12);
            switch (rng % 41) { /* now and then a value the loops treat specially */
            case 0: x[i] = NAN; break;
            case 1: x[i] = 0.0f; break;
            case 2: x[i] = -0.0f; break;
            case 3: x[i] = -INFINITY; break;
            case 4: x[i] = x[i ? i - 1 : 0]; break;
            case 5: x[i] = -110.0f; break;
            default: break;
            }
        }
        if (round % 7 == 0) /* a row whose maximum is a zero of either sign, met in some order */
            for (int i = 0; i < n; i++) x[i] = rng % 3 == 0 ? (rng % 2 ? 0.0f : -0.0f) : -frand(1, 5);
        float m = x[0];
        for (int i = 1; i < n; i++) m = x[i] > m ? x[i] : m;
        const float got = ac_max_row(x, (size_t)n);
        CHECKF(isnan(m) ? isnan(got) : bits(got) == bits(m), "round %d (n %d): maximum %a, the loop's %a", round, n,
               (double)got, (double)m);
        if (isnan(m)) continue;
        double s = 0;
        for (int i = 0; i < n; i++) s += expf(x[i] - m);
        const double t = ac_exp_sum(x, (size_t)n, m, out);
        CHECKF(isnan(s) ? isnan(t) : memcmp(&s, &t, sizeof s) == 0, "round %d (n %d): sum %a, the loop's %a", round, n,
               t, s);
        for (int i = 0; i < n; i++) {
            const float e = expf(x[i] - m);
            CHECKF(isnan(e) ? isnan(out[i]) : bits(e) == bits(out[i]), "round %d: value %d %a, expf %a", round, i,
                   (double)out[i], (double)e);
        }
    }
}

int main(void) {
    RUN(rows_as_the_loops);
    RUN(every_float);
    return TEST_EXIT();
}
