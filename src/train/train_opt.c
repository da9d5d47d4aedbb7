/* train_opt.c: the optimizer step of attncap train: clipping by global norm and bias-corrected
 * Adam (beta1 0.9, beta2 0.999, eps 1e-8), threaded. */
#include <math.h>
#include <stddef.h>

#include "pool.h"
#include "train_internal.h"

/* Clipping and Adam over 10M parameters are memory-bound passes: they run in threads over fixed
 * slices, one task each (the norm is summed slice by slice in order, so the result does not depend
 * on threads). */
#define OPT_SLICES 16
typedef struct opt_job {
    float *p, *g, *m, *v, *ema;
    size_t n;
    int phase;
    double sq[OPT_SLICES];
    float scale, lr, wd, c1, c2, ema_decay;
} opt_job;

static void opt_slice(void *arg, int sl, int thread) {
    (void)thread;
    opt_job *j = arg;
    const size_t i0 = j->n * (size_t)sl / OPT_SLICES, i1 = j->n * (size_t)(sl + 1) / OPT_SLICES;
    float *restrict p = j->p, *restrict g = j->g, *restrict m = j->m, *restrict v = j->v;
    if (j->phase == 0) {
        double s = 0;
        for (size_t i = i0; i < i1; i++) s += (double)g[i] * g[i];
        j->sq[sl] = s;
    } else {
        /* 1 - beta as its own constant: 1 - 0.999f in float is 0.00099998713, 1.3e-5 off. */
        const float b1 = 0.9f, b2 = 0.999f, one_b1 = 0.1f, one_b2 = 0.001f, eps = 1e-8f;
        const float k = j->scale, a = j->lr, wd = j->wd, c1 = j->c1, c2 = j->c2;
        for (size_t i = i0; i < i1; i++) {
            const float gi = g[i] * k + wd * p[i];
            m[i] = b1 * m[i] + one_b1 * gi;
            v[i] = b2 * v[i] + one_b2 * gi * gi;
            p[i] -= a * (m[i] * c1) / (sqrtf(v[i] * c2) + eps);
        }
        if (j->ema) {
            float *restrict e = j->ema;
            const float d = j->ema_decay;
            for (size_t i = i0; i < i1; i++) e[i] = d * e[i] + (1 - d) * p[i];
        }
    }
}

/* Clips g to global norm `clip` (0 = no clipping) and takes one bias-corrected Adam step t; then, if
 * ema is not NULL, moves it toward the new p: ema = d ema + (1 - d) p. Returns the norm before
 * clipping. */
double ac_clip_and_adam(float *p, float *g, float *m, float *v, float *ema, float ema_decay, size_t n, float clip,
                        double lr, long t, float wd, int threads) {
    const int T = threads < 1 ? 1 : threads > OPT_SLICES ? OPT_SLICES : threads;
    opt_job job = {.p = p, .g = g, .m = m, .v = v, .ema = ema, .n = n, .ema_decay = ema_decay};
    ac_parallel_for(OPT_SLICES, T, opt_slice, &job);
    double s = 0;
    for (int sl = 0; sl < OPT_SLICES; sl++) s += job.sq[sl];
    const double norm = sqrt(s);
    const float scale = clip > 0 && norm > clip ? (float)(clip / norm) : 1.0f;
    const float c1 = (float)(1.0 / (1.0 - pow(0.9, (double)t))), c2 = (float)(1.0 / (1.0 - pow(0.999, (double)t)));
    job.phase = 1, job.scale = scale, job.lr = (float)lr, job.wd = wd, job.c1 = c1, job.c2 = c2;
    ac_parallel_for(OPT_SLICES, T, opt_slice, &job);
    return norm;
}
