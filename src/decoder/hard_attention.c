/* hard_attention.c: the kernels of stochastic "hard" attention (Xu et al. 2015 §4.1); see
 * hard_attention_internal.h. decoder_train.c puts them together into the REINFORCE estimator and
 * decoder.c's inference step uses the argmax.
 *
 * With alpha = softmax(e) over one head's L scores:
 *   d log alpha_s / d e_i = [i = s] - alpha_i
 *   d H / d e_i = -alpha_i (log alpha_i + H),   H = -sum_i alpha_i log alpha_i
 * (from dH/dalpha_i = -(log alpha_i + 1) through the softmax's backward). */
#include "hard_attention_internal.h"

#include <math.h>
#include <string.h>

#include "decoder_internal.h"

void ac_hard_attention_sample(const float *alpha, int heads, int L, uint64_t seed, uint64_t idx, int *s) {
    for (int j = 0; j < heads; j++) {
        const float *a = alpha + (size_t)j * L;
        /* u in [0, 1) with 53 bits; the last location with alpha > 0 catches rounding at the top */
        const double u = (double)(ac_mix64(seed + (idx * (uint64_t)heads + (uint64_t)j + 1) * 0x9E3779B97F4A7C15ull) >> 11) *
                         (1.0 / 9007199254740992.0);
        double cum = 0;
        int pick = -1;
        for (int l = 0; l < L; l++) {
            if (a[l] <= 0) continue;
            pick = l;
            cum += a[l];
            if (u < cum) break;
        }
        s[j] = pick < 0 ? 0 : pick;
    }
}

void ac_hard_attention_argmax(const float *alpha, int heads, int L, int *s) {
    for (int j = 0; j < heads; j++) {
        const float *a = alpha + (size_t)j * L;
        int best = 0;
        for (int l = 1; l < L; l++)
            if (a[l] > a[best]) best = l;
        s[j] = best;
    }
}

void ac_hard_attention_onehot(float *alpha, int heads, int L, const int *s) {
    for (int j = 0; j < heads; j++) {
        float *a = alpha + (size_t)j * L;
        memset(a, 0, sizeof(float) * (size_t)L);
        a[s[j]] = 1.0f;
    }
}

void ac_hard_attention_context_forward(const float *ann, int L, int D, int heads, const int *s, float *ctx) {
    (void)L;
    const int dv = D / heads;
    for (int j = 0; j < heads; j++)
        memcpy(ctx + (size_t)j * dv, ann + (size_t)s[j] * D + (size_t)j * dv, sizeof(float) * (size_t)dv);
}

double ac_hard_attention_logp(const float *alpha, int heads, int L, const int *s) {
    double lp = 0;
    for (int j = 0; j < heads; j++) lp += log((double)alpha[(size_t)j * L + s[j]]);
    return lp;
}

/* One head's entropy. */
static double head_entropy(const float *a, int L) {
    double h = 0;
    for (int l = 0; l < L; l++)
        if (a[l] > 0) h -= (double)a[l] * log((double)a[l]);
    return h;
}

double ac_hard_attention_entropy(const float *alpha, int heads, int L) {
    double h = 0;
    for (int j = 0; j < heads; j++) h += head_entropy(alpha + (size_t)j * L, L);
    return h;
}

void ac_hard_attention_backward(const float *alpha, int heads, int L, const int *s, float kr, float ke, float *de) {
    for (int j = 0; j < heads; j++) {
        const float *a = alpha + (size_t)j * L;
        float *d = de + (size_t)j * L;
        const double H = ke != 0 ? head_entropy(a, L) : 0;
        for (int l = 0; l < L; l++) {
            double g = -(double)kr * a[l];
            if (ke != 0 && a[l] > 0) g += (double)ke * a[l] * (log((double)a[l]) + H);
            d[l] += (float)g;
        }
        d[s[j]] += kr;
    }
}
