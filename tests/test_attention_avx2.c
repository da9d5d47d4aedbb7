/* test_attention_avx2: the additive attention score's AVX2 path (attention.c's tanh8, taken where the
 * build has AVX2 but not AVX-512) on every machine that runs AVX2, AVX-512 ones included: attention.c is
 * compiled into this test with __AVX512F__ undefined. Its scores against
 *  - the scalar ac_tanhf summed in attention.c's order (16 partial sums, then the tail): the same bits,
 *    which is what keeps captions identical across instruction sets;
 *  - tanh from libm in double: within 2e-6 relative to the sum of |w_e| (an independent reference).
 * The training forward's stored tanh (the cache) is checked the same way. Widths 256 (the shipped
 * model's), 40 (a tail of 8) and 7 (tail only); keys past the clamp (|k + q| > 7.9) and near 0. */
#undef __AVX512F__
#include "../src/decoder/attention.c"

#include "test.h"

static float frand(unsigned *s) {
    *s = *s * 1103515245u + 12345u;
    return (float)(*s >> 8 & 0xffff) / 65536.0f - 0.5f;
}

/* attention.c's scalar loop: 16 partial sums of w_e tanh, the tail into e, then the partial sums */
static float scalar_row(int A, const float *k, const float *q, const float *we, float *th) {
    float acc[16] = {0}, e = 0;
    int j = 0;
    for (; j + 16 <= A; j += 16)
        for (int i = 0; i < 16; i++) th[j + i] = ac_tanhf(k[j + i] + q[j + i]), acc[i] += th[j + i] * we[j + i];
    for (; j < A; j++) th[j] = ac_tanhf(k[j] + q[j]), e += th[j] * we[j];
    for (int i = 0; i < 16; i++) e += acc[i];
    return e;
}

static void test_additive_scores(void) {
#if !defined(__AVX2__)
    SKIP("the build has no AVX2 (ARCH=-march=x86-64)");
#else
    enum { L = 37, AMAX = 256 };
    static const int widths[] = {256, 40, 7};
    unsigned s = 7;
    for (size_t wi = 0; wi < sizeof widths / sizeof *widths; wi++) {
        const int A = widths[wi];
        static float keys[L * AMAX], q[AMAX], we[AMAX], e[L], cache[L * AMAX], th[AMAX];
        double wsum = 0;
        for (int j = 0; j < A; j++) q[j] = 4 * frand(&s), we[j] = frand(&s), wsum += fabs(we[j]);
        for (int i = 0; i < L * A; i++) keys[i] = (i % 11 == 0 ? 30 : i % 13 == 0 ? 1e-3f : 8) * frand(&s);
        const ac_attention_fn f = {AC_ATTENTION_ADDITIVE, A, 1, we, 1.0f};
        for (int store = 0; store < 2; store++) {
            ac_attention_scores_forward(&f, L, q, keys, e, store ? cache : NULL);
            int same = 1, cache_same = 1;
            double worst = 0;
            for (int l = 0; l < L; l++) {
                const float want = scalar_row(A, keys + (size_t)l * A, q, we, th);
                same &= !memcmp(&want, &e[l], sizeof want);
                if (store) cache_same &= !memcmp(th, cache + (size_t)l * A, sizeof(float) * (size_t)A);
                double exact = 0;
                for (int j = 0; j < A; j++) exact += we[j] * tanh((double)keys[(size_t)l * A + j] + q[j]);
                const double d = fabs(e[l] - exact) / wsum;
                worst = d > worst ? d : worst;
            }
            CHECKF(same, "A %d, cache %d: scores differ from the scalar tanh's bits", A, store);
            CHECKF(cache_same, "A %d: the stored tanh differs from the scalar tanh's bits", A);
            CHECKF(worst <= 2e-6, "A %d, cache %d: %.3g from libm's tanh (relative to sum |w_e|)", A, store, worst);
        }
    }
#endif
}

int main(void) {
    RUN(test_additive_scores);
    return TEST_EXIT();
}
