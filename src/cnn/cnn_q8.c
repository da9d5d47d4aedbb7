/* cnn_q8.c: AC_PRECISION_INT8 for a float graph (the detector): its convolutions' products on integers,
 * the rest of the graph as float32 (cnn_q8.h).
 *
 * Dynamic quantization, per tensor and per run, as ONNX Runtime's and PyTorch's dynamic modes do for
 * matrix products: each filter, once, per output channel and symmetric, w ~ sw[o] * q (q in -127..127,
 * sw[o] = max |w[o]| / 127); each input, per run, from its own range with 0 included, x ~ sx * (u - zx)
 * (u in 0..255, sx = (max - min) / 255, zx = round(-min / sx)): a photo's pixels (0..255) are exact.
 * The sums sum_k u * q are `vpdpbusd`'s (cnn_int8_kernels.c), exact; then
 * y[o] = fma(sum_k u q - zx sum_k q, sx sw[o], bias[o]), the fused activation, and SiLU and the
 * residual sum on each block of outputs while it is in cache (then_block). The scale comes from the
 * whole tensor, not the band a thread holds, so the result is the same for any thread count; up to
 * SiLU's last bits (silu_fast), the same on every CPU. Detections: tests/core_detect.sh. */
#include <math.h>
#if defined(__AVX512F__)
#include <immintrin.h>
#endif
#include <stdlib.h>
#include <string.h>

#include "cnn_int8_internal.h"
#include "cnn_plan.h"
#include "cnn_q8.h"
#include "cnn_silu.h"
#include "alloc_internal.h"

typedef struct q8_conv {
    ac_i8_gemm_w w;    /* the filter: packed int8, col (this run's constant part), d 0 */
    float *wscale;     /* [np] per output channel, 0 in the padding */
    int32_t *wsum;     /* [n] sum of each channel's q */
    float *scale;      /* [np] this run's sx * wscale */
} q8_conv;

struct cnn_q8 {
    q8_conv *conv; /* one per eligible CONV_2D step */
    int n_conv;
    int borrowed;  /* conv, in and cols are the base plan's (ac_cnn_q8_create's share) */
    int *of_step;  /* [n_steps] index into conv, or -1 */
    uint8_t *in;   /* the quantized input of the conv running, the largest input's size */
    uint8_t *cols; /* its patches (im2col), the largest's size */
};

/* A CONV_2D of float filters that runs on its own (not inside a fused pointwise-depthwise group). */
static int eligible(const ac_cnn *c, const cnn_step *s) {
    if (s->op->opcode != OP_CONV_2D || !s->packed || s->fused || s->absorbed || (s > c->steps && s[-1].fused)) return 0;
    const ac_tfl_tensor *w = &c->m->tensors[s->op->inputs[1]];
    return w->type == 0 && w->data && (size_t)s->g.kh * s->g.kw * s->g.c <= 16384; /* int32 sums: 16384 * 255 * 127 < 2^31 */
}

static int make_conv(const ac_cnn *c, const cnn_step *s, q8_conv *q) {
    const ac_conv_geom *g = &s->g;
    const int n = g->oc, k = g->kh * g->kw * g->c;
    const float *w = ac_cnn_in_data(c, s, 1); /* [n][kh][kw][c]: the patches' order */
    ac_i8_gemm_w *gw = &q->w;
    *gw = (ac_i8_gemm_w){n, k, (k + 3) & ~3, (n + 15) & ~15, NULL, NULL, 0};
    gw->packed = ac_calloc((size_t)gw->np * gw->kp, 1);
    gw->col = ac_calloc((size_t)gw->np, sizeof *gw->col);
    q->wscale = ac_calloc((size_t)gw->np, sizeof *q->wscale);
    q->scale = ac_calloc((size_t)gw->np, sizeof *q->scale);
    q->wsum = ac_calloc((size_t)n, sizeof *q->wsum);
    if (!gw->packed || !gw->col || !q->wscale || !q->scale || !q->wsum) return -1;
    for (int o = 0; o < n; o++) {
        const float *wo = w + (size_t)o * k;
        float top = 0;
        for (int j = 0; j < k; j++) top = fabsf(wo[j]) > top ? fabsf(wo[j]) : top;
        const float sw = top > 0 ? top / 127.0f : 1.0f;
        int32_t sum = 0;
        for (int j = 0; j < k; j++) {
            const float r = nearbyintf(wo[j] / sw);
            const int8_t v = (int8_t)(r > 127 ? 127 : r < -127 ? -127 : r);
            gw->packed[ac_i8_packed_at(gw, o, j)] = v;
            sum += v;
        }
        q->wscale[o] = sw, q->wsum[o] = sum;
    }
    return 0;
}

static void free_conv(q8_conv *q) {
    free(q->w.packed), free(q->w.col), free(q->wscale), free(q->scale), free(q->wsum);
}

void ac_cnn_q8_free(cnn_q8 *p) {
    if (!p) return;
    if (!p->borrowed) {
        for (int i = 0; i < p->n_conv; i++) free_conv(&p->conv[i]);
        free(p->conv), free(p->in), free(p->cols);
    }
    free(p->of_step), free(p);
}

/* A shared clone's: the base's filters step for step (the plans of one graph have the same steps, as
 * their packed filters, cnn.c's plan_step), its buffers (sized for the base, the larger input). NULL
 * when a step differs: the clone then makes its own. */
static cnn_q8 *borrow(const ac_cnn *c, const cnn_q8 *share) {
    const ac_cnn *b = c->base;
    if (b->n_steps != c->n_steps) return NULL;
    for (int k = 0; k < c->n_steps; k++) {
        const cnn_step *s = &c->steps[k];
        const int at = share->of_step[k];
        if (b->steps[k].op != s->op || (at >= 0) != eligible(c, s) ||
            (at >= 0 && (b->steps[k].g.c != s->g.c || b->steps[k].g.oc != s->g.oc || (size_t)s->g.h * s->g.w > (size_t)b->steps[k].g.h * b->steps[k].g.w ||
                         (size_t)s->g.oh * s->g.ow > (size_t)b->steps[k].g.oh * b->steps[k].g.ow)))
            return NULL;
    }
    cnn_q8 *p = ac_calloc(1, sizeof *p);
    if (!p || !(p->of_step = ac_malloc((size_t)c->n_steps * sizeof *p->of_step))) return free(p), NULL;
    memcpy(p->of_step, share->of_step, (size_t)c->n_steps * sizeof *p->of_step);
    p->conv = share->conv, p->n_conv = share->n_conv, p->in = share->in, p->cols = share->cols, p->borrowed = 1;
    return p;
}

cnn_q8 *ac_cnn_q8_create(const ac_cnn *c, const cnn_q8 *share, ac_err *err) {
    cnn_q8 *p = share && c->base ? borrow(c, share) : NULL;
    if (p) return p;
    p = ac_calloc(1, sizeof *p);
    if (!p || !(p->of_step = ac_malloc((size_t)c->n_steps * sizeof *p->of_step)) ||
        !(p->conv = ac_calloc((size_t)c->n_steps, sizeof *p->conv))) {
        ac_cnn_q8_free(p);
        return ac_errf(err, "%s: out of memory for int8 filters", c->m->path), NULL;
    }
    size_t in_max = 0, cols_max = 0;
    for (int k = 0; k < c->n_steps; k++) {
        const cnn_step *s = &c->steps[k];
        p->of_step[k] = -1;
        if (!eligible(c, s)) continue;
        q8_conv *q = &p->conv[p->n_conv];
        if (make_conv(c, s, q) < 0) {
            free_conv(q);
            ac_cnn_q8_free(p);
            return ac_errf(err, "%s: out of memory for int8 filters", c->m->path), NULL;
        }
        p->of_step[k] = p->n_conv++;
        const ac_conv_geom *g = &s->g;
        const size_t in = (size_t)g->h * g->w * g->c, cols = (size_t)g->oh * g->ow * q->w.kp;
        in_max = in > in_max ? in : in_max;
        if (!ac_cnn_conv_is_pointwise(g)) cols_max = cols > cols_max ? cols : cols_max;
    }
    if ((in_max && !(p->in = ac_malloc(in_max))) || (cols_max && !(p->cols = ac_malloc(cols_max)))) {
        ac_cnn_q8_free(p);
        return ac_errf(err, "%s: out of memory for int8 activations", c->m->path), NULL;
    }
    return p;
}

/* u = clamp(round(x / sx) + zx, 0, 255), round half to even of x times 1 / sx: this path's own rule
 * (not TFLite's), the same on every kernel: a product rounded once, then the conversion's rounding. */
static void quantize(const float *x, size_t n, float inv, int32_t zx, uint8_t *u) {
    size_t i = 0;
#if defined(__AVX512F__)
    const __m512 s = _mm512_set1_ps(inv);
    const __m512i z = _mm512_set1_epi32(zx), lo = _mm512_setzero_si512(), hi = _mm512_set1_epi32(255);
    for (; i + 16 <= n; i += 16) {
        const __m512i q = _mm512_add_epi32(_mm512_cvt_roundps_epi32(_mm512_mul_ps(_mm512_loadu_ps(x + i), s),
                                                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), z);
        _mm_storeu_si128((__m128i *)(u + i), _mm512_cvtepi32_epi8(_mm512_min_epi32(_mm512_max_epi32(q, lo), hi)));
    }
#endif
    for (; i < n; i++) { /* |x / sx| <= 255: the range includes x */
        const int32_t q = (int32_t)nearbyintf(x[i] * inv) + zx;
        u[i] = (uint8_t)(q < 0 ? 0 : q > 255 ? 255 : q);
    }
}

typedef struct then_ctx {
    int silu;
    const ac_cnn_sum *sum; /* laid out as the output */
    float lo, hi;          /* the sum's activation */
} then_ctx;

/* SiLU with the reciprocal of 1 + e^-x by an estimate and one Newton step (within ~2 ulp of the
 * division) instead of float32's true division: next to the integer products the division was as
 * slow as they (its latency, one chain per vector), and the next convolution quantizes the result to
 * 8 bits anyway. */
static void silu_fast(float *x, int n) {
    int i = 0;
#if defined(__AVX512F__)
    const __m512 one = _mm512_set1_ps(1.0f), two = _mm512_set1_ps(2.0f), low = _mm512_set1_ps(-87.0f);
    for (; i + 16 <= n; i += 16) {
        const __m512 v = _mm512_loadu_ps(x + i);
        /* below -87, e^-x would be infinite and the Newton step inf * 0: there SiLU is -x e^-87-ish, 0 */
        const __m512 d = _mm512_add_ps(ac_cnn_expneg16(_mm512_max_ps(v, low)), one);
        __m512 r = _mm512_rcp14_ps(d);
        r = _mm512_mul_ps(r, _mm512_fnmadd_ps(d, r, two)); /* r (2 - d r) */
        _mm512_storeu_ps(x + i, _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, low, _CMP_LT_OQ), _mm512_mul_ps(v, r), _mm512_setzero_ps()));
    }
#endif
    for (; i < n; i++) x[i] = ac_cnn_silu1(x[i]);
}

/* The SiLU and the residual sum of a block of outputs the product just stored. */
static void then_block(void *arg, float *c, int ldc, int r0, int rows, int c0, int n) {
    const then_ctx *t = arg;
    for (int r = r0; r < r0 + rows; r++) {
        float *o = c + (size_t)r * ldc + c0;
        if (t->silu) silu_fast(o, n);
        if (t->sum) {
            const float *a = t->sum->add + (size_t)r * ldc + c0;
            for (int q = 0; q < n; q++) {
                const float y = o[q] + a[q];
                o[q] = y < t->lo ? t->lo : y > t->hi ? t->hi : y;
            }
        }
    }
}

int ac_cnn_q8_conv(const ac_cnn *c, const cnn_step *s, const float *x, float *out, const ac_cnn_sum *sum) {
    cnn_q8 *p = c->q8;
    const int at = p ? p->of_step[s - c->steps] : -1;
    if (at < 0) return 1;
    q8_conv *q = &p->conv[at];
    const ac_conv_geom *g = &s->g;
    const size_t n_in = (size_t)g->h * g->w * g->c;
    const int silu = g->act == CNN_ACT_SILU;
    then_ctx t = {silu, sum, 0, 0};
    if (sum) ac_cnn_act_bounds(sum->act, &t.lo, &t.hi);
    float lo, hi;
    if (ac_i8_range(x, n_in, &lo, &hi) < 0) return 1; /* not finite: float32's conv (the run then fails on it) */
    lo = lo < 0 ? lo : 0, hi = hi > 0 ? hi : 0;
    const float sx = hi > lo ? (hi - lo) / 255.0f : 1.0f;
    const float z = nearbyintf(-lo / sx);
    const int32_t zx = z < 0 ? 0 : z > 255 ? 255 : (int32_t)z;
    quantize(x, n_in, 1.0f / sx, zx, p->in);
    const uint8_t *a = p->in;
    int lda = g->c;
    if (!ac_cnn_conv_is_pointwise(g)) {
        const ac_i8_geom g8 = {g->h, g->w, g->c, g->oh, g->ow, g->oc, g->kh, g->kw, g->sh, g->sw, g->dh, g->dw, g->pt, g->pl};
        ac_i8_im2col_all(&g8, p->in, (uint8_t)zx, q->w.kp, p->cols, c->pool);
        a = p->cols, lda = q->w.kp;
    }
    for (int o = 0; o < g->oc; o++) q->w.col[o] = -zx * q->wsum[o], q->scale[o] = sx * q->wscale[o];
    ac_i8_fout f = {q->scale, ac_cnn_in_data(c, s, 2), 0, 0, out, g->oc, silu || sum ? then_block : NULL, &t};
    ac_cnn_act_bounds(silu ? CNN_ACT_NONE : g->act, &f.lo, &f.hi);
    ac_i8_gemm_float(g->oh * g->ow, a, lda, &q->w, &f, c->pool);
    return 0;
}
