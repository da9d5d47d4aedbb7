/* test_cnn_silu: the engine's SiLU and LOGISTIC (src/cnn/cnn_silu.h, the activation fused into YOLOX's
 * convs) against x / (1 + exp(-x)) in double precision from libm, on the instruction set the build
 * compiles for (AVX-512, AVX2 + FMA or neither: the header's path is chosen by the ISA macros, so
 * building with ARCH=-march=x86-64-v3 or ARCH=-march=x86-64 tests the others). Inputs: a dense sweep of [-110, 110], the
 * ends of the exp's range, zeros, tiny and huge values. Tolerance: 4 ulp of the exact value (the header
 * promises a few ulp), or 1e-35 absolute where SiLU underflows. */
#include <float.h>

#include "test.h"

#include "cnn_silu.h"

enum { N = 200000 };

static float *inputs(size_t *n) {
    static float x[N + 64];
    size_t k = 0;
    for (int i = 0; i < N; i++) x[k++] = -110.0f + 220.0f * (float)i / (float)N;
    const float extra[] = {0.0f, -0.0f, 1e-30f, -1e-30f, 1e-45f, 87.0f, 88.0f, 88.7f, 89.0f, 103.9f, 104.0f, 200.0f,
                           -87.0f, -87.3f, -88.0f, -88.7f, -89.0f, -103.9f, -104.0f, -200.0f, 1e30f, -1e30f, FLT_MAX,
                           -FLT_MAX, 0.5f, -0.5f, 3.0f, -3.0f, 16.0f, -16.0f, 17.0f};
    for (size_t i = 0; i < sizeof extra / sizeof *extra; i++) x[k++] = extra[i];
    *n = k;
    return x;
}

static double ulp(double v) {
    float f = (float)fabs(v);
    return f < FLT_MIN ? 1.4e-45 : (double)(nextafterf(f, INFINITY) - f);
}

/* The worst error of got[i] against the exact value, in ulps of it; -1 (and *at set) on a failure of
 * the absolute floor where the value is below 1e-35. */
static double worst(const float *x, const float *got, size_t n, int sigmoid, size_t *at) {
    double w = 0;
    for (size_t i = 0; i < n; i++) {
        double e = 1.0 / (1.0 + exp(-(double)x[i]));
        if (!sigmoid) e *= x[i];
        double err = fabs((double)got[i] - e);
        if (!isfinite(got[i])) return *at = i, 1e30;
        if (fabs(e) < 1e-35) {
            if (err > 1e-35) return *at = i, 1e30;
            continue;
        }
        if (err / ulp(e) > w) w = err / ulp(e), *at = i;
    }
    return w;
}

typedef void (*silu_fn)(float *, size_t);
typedef void (*sigmoid_fn)(const float *, float *, size_t);

static void check(const char *isa, silu_fn silu, sigmoid_fn sigm) {
    size_t n, at = 0;
    float *x = inputs(&n), *y = malloc(n * sizeof *y);
    CHECK(y != NULL);
    memcpy(y, x, n * sizeof *y);
    silu(y, n);
    double w = worst(x, y, n, 0, &at);
    CHECKF(w <= 4, "%s SiLU: %.2f ulp at x = %.9g (got %.9g)", isa, w, x[at], y[at]);
    printf("# %s SiLU worst %.2f ulp\n", isa, w);
    sigm(x, y, n);
    w = worst(x, y, n, 1, &at);
    CHECKF(w <= 4, "%s sigmoid: %.2f ulp at x = %.9g (got %.9g)", isa, w, x[at], y[at]);
    printf("# %s sigmoid worst %.2f ulp\n", isa, w);
    /* every tail length of the vector loops */
    for (size_t len = 0; len < 40; len++) {
        float a[40], b[40];
        for (size_t i = 0; i < 40; i++) a[i] = b[i] = (float)i - 20.5f;
        silu(a, len);
        for (size_t i = 0; i < 40; i++) {
            double e = i < len ? b[i] / (1.0 + exp(-(double)b[i])) : b[i];
            CHECKF(fabs(a[i] - e) <= 4 * ulp(e), "%s SiLU of %zu values: element %zu is %.9g, not %.9g", isa, len, i, a[i], e);
        }
    }
    free(y);
}

static void silu_and_sigmoid(void) {
#if defined(__AVX512F__)
    check("AVX-512", ac_cnn_silu_inplace, ac_cnn_sigmoid);
#elif defined(__AVX2__) && defined(__FMA__)
    check("AVX2", ac_cnn_silu_inplace, ac_cnn_sigmoid);
#else
    check("scalar", ac_cnn_silu_inplace, ac_cnn_sigmoid);
#endif
}

int main(void) {
    RUN(silu_and_sigmoid);
    return TEST_EXIT();
}
