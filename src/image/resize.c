/* resize.c: resizing photos (image.h) and turning them into the CNN's floats.
 *
 * Resizing is separable with the triangle filter of Pillow / torch antialias=True: when shrinking by
 * s the filter is stretched to support s (every source pixel contributes: antialiased), when
 * enlarging it is plain bilinear with half-pixel centres. ac_image_resize_bilinear never stretches
 * (TF / torch antialias=False bilinear). Both compute in float and round once at the end. */
#include "attncap/image.h"

#include <math.h>
#if defined(__AVX512F__) || defined(__AVX2__)
#include <immintrin.h>
#endif
#include <stdlib.h>
#include <string.h>

#include "alloc_internal.h"

/* Per output index: the first source index and n normalised weights (stored at w + i*stride). */
typedef struct {
    int *start, *n, stride;
    float *w;
} coeffs;

static void coeffs_free(coeffs *c) {
    free(c->start);
    free(c->n);
    free(c->w);
    c->start = c->n = NULL, c->w = NULL; /* a second free (coeffs_make's failure, then its caller's) is none */
}

/* Pillow's precompute_coeffs with the triangle filter (also torch's antialias=True path); with
 * stretch = 0 the support never grows, which is plain half-pixel bilinear with edge clamping. */
static int coeffs_make(int in, int out, int stretch, coeffs *c) {
    double scale = (double)in / out, fs = stretch && scale > 1 ? scale : 1, support = fs;
    c->stride = (int)ceil(support) * 2 + 1;
    c->start = ac_malloc((size_t)out * sizeof *c->start);
    c->n = ac_malloc((size_t)out * sizeof *c->n);
    c->w = ac_malloc((size_t)out * c->stride * sizeof *c->w);
    double *tmp = ac_malloc((size_t)c->stride * sizeof *tmp);
    if (!c->start || !c->n || !c->w || !tmp) {
        coeffs_free(c);
        free(tmp);
        return -1;
    }
    for (int i = 0; i < out; i++) {
        double center = (i + 0.5) * scale;
        int lo = (int)floor(center - support + 0.5), hi = (int)floor(center + support + 0.5);
        if (lo < 0) lo = 0;
        if (hi > in) hi = in;
        if (hi - lo > c->stride) hi = lo + c->stride;
        double tot = 0;
        for (int x = lo; x < hi; x++) {
            double d = fabs((x - center + 0.5) / fs);
            tmp[x - lo] = d < 1 ? 1 - d : 0;
            tot += tmp[x - lo];
        }
        if (tot <= 0) { /* cannot happen for in >= 1, but never divide by zero */
            lo = (int)fmin(fmax(floor(center), 0), in - 1), hi = lo + 1, tmp[0] = tot = 1;
        }
        c->start[i] = lo;
        c->n[i] = hi - lo;
        for (int k = 0; k < hi - lo; k++) c->w[(size_t)i * c->stride + k] = (float)(tmp[k] / tot);
    }
    free(tmp);
    return 0;
}

/* o[x] = the rounded sum over j (ascending, from 0) of k[j] * s[j * len + x], clamped to 0..255, for
 * x < len. Vectorised across x with the very operations of the scalar tail, in the same order (a
 * multiply, then an add: no fused multiply-add), so every pixel gets the same bits either way. */
static void vertical_row(const float *s, size_t len, const float *k, int n, uint8_t *o) {
    size_t x = 0;
#if defined(__AVX512F__)
    const __m512 lo = _mm512_setzero_ps(), hi = _mm512_set1_ps(255.0f), half = _mm512_set1_ps(0.5f);
    for (; x + 16 <= len; x += 16) {
        __m512 v = _mm512_setzero_ps();
        for (int j = 0; j < n; j++) v = _mm512_add_ps(v, _mm512_mul_ps(_mm512_set1_ps(k[j]), _mm512_loadu_ps(s + j * len + x)));
        v = _mm512_add_ps(_mm512_min_ps(_mm512_max_ps(v, lo), hi), half);
        _mm_storeu_si128((__m128i *)(o + x), _mm512_cvtepi32_epi8(_mm512_cvttps_epi32(v)));
    }
#elif defined(__AVX2__)
    const __m256 lo = _mm256_setzero_ps(), hi = _mm256_set1_ps(255.0f), half = _mm256_set1_ps(0.5f);
    for (; x + 8 <= len; x += 8) {
        __m256 v = _mm256_setzero_ps();
        for (int j = 0; j < n; j++) v = _mm256_add_ps(v, _mm256_mul_ps(_mm256_set1_ps(k[j]), _mm256_loadu_ps(s + j * len + x)));
        const __m256i i32 = _mm256_cvttps_epi32(_mm256_add_ps(_mm256_min_ps(_mm256_max_ps(v, lo), hi), half));
        const __m128i i16 = _mm_packus_epi32(_mm256_castsi256_si128(i32), _mm256_extracti128_si256(i32, 1));
        _mm_storel_epi64((__m128i *)(o + x), _mm_packus_epi16(i16, i16)); /* 0..255 already: no saturation */
    }
#endif
    for (; x < len; x++) {
        float v = 0;
        for (int j = 0; j < n; j++) v += k[j] * s[j * len + x];
        v = v < 0 ? 0 : v > 255 ? 255 : v;
        o[x] = (uint8_t)(v + 0.5f);
    }
}

/* The horizontal pass, 16 output pixels of one channel at a time: for tap j, the 16 source values
 * are gathered from the row converted to float, times the tap's weights (0 past a pixel's last tap:
 * adding +0 leaves the sum as it was), summed in the scalar loop's order, with its operations (a
 * multiply, then an add), so the same bits. hpass_init makes its tables once per resize (returns 0
 * without AVX-512 or memory: the scalar loop then does every row). */
typedef struct {
    int maxn, wb;
    int32_t *idx;
    float *wk, *f;
} hpass;

static int hpass_init(hpass *hp, const ac_image *src, int w, const coeffs *cx) {
    memset(hp, 0, sizeof *hp);
#if defined(__AVX512F__)
    int maxn = 1, wb = (w + 15) / 16 * 16;
    for (int x = 0; x < w; x++) maxn = cx->n[x] > maxn ? cx->n[x] : maxn;
    hp->idx = ac_malloc((size_t)maxn * wb * sizeof *hp->idx);
    hp->wk = ac_malloc((size_t)maxn * wb * sizeof *hp->wk);
    hp->f = ac_malloc(((size_t)src->w * 3 + 16) * sizeof *hp->f);
    if (!hp->idx || !hp->wk || !hp->f) {
        free(hp->idx), free(hp->wk), free(hp->f);
        memset(hp, 0, sizeof *hp);
        return 0;
    }
    hp->maxn = maxn, hp->wb = wb;
    for (int j = 0; j < maxn; j++)
        for (int x = 0; x < wb; x++) {
            int in = x < w && j < cx->n[x], sx = x < w ? cx->start[x] + (in ? j : 0) : 0;
            hp->idx[(size_t)j * wb + x] = sx * 3;
            hp->wk[(size_t)j * wb + x] = in ? cx->w[(size_t)x * cx->stride + j] : 0.0f;
        }
    return 1;
#else
    (void)src, (void)w, (void)cx;
    return 0;
#endif
}

static void hpass_free(hpass *hp) { free(hp->idx), free(hp->wk), free(hp->f); }

/* Source rows [r0, r1) through the horizontal pass into out ([r1 - r0][w][3] floats). */
static void horizontal_rows(const hpass *hp, const ac_image *src, int w, const coeffs *cx, int r0, int r1, float *out) {
#if defined(__AVX512F__)
    if (hp->idx) {
        const __m512i step3 = _mm512_setr_epi32(0, 3, 6, 9, 12, 15, 18, 21, 24, 27, 30, 33, 36, 39, 42, 45);
        const size_t n3 = (size_t)src->w * 3;
        float *f = hp->f;
        for (int y = r0; y < r1; y++) {
            const uint8_t *row = src->px + (size_t)y * n3;
            size_t i = 0;
            for (; i + 16 <= n3; i += 16)
                _mm512_storeu_ps(f + i, _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(row + i)))));
            for (; i < n3; i++) f[i] = row[i];
            float *o = out + (size_t)(y - r0) * w * 3;
            for (int x = 0; x < w; x += 16) {
                __mmask16 m = w - x >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (w - x)) - 1);
                for (int c = 0; c < 3; c++) {
                    __m512 acc = _mm512_setzero_ps();
                    for (int j = 0; j < hp->maxn; j++) {
                        __m512i ix = _mm512_loadu_si512(hp->idx + (size_t)j * hp->wb + x);
                        __m512 v = _mm512_i32gather_ps(ix, f + c, 4);
                        acc = _mm512_add_ps(acc, _mm512_mul_ps(_mm512_loadu_ps(hp->wk + (size_t)j * hp->wb + x), v));
                    }
                    _mm512_mask_i32scatter_ps(o + (size_t)3 * x + c, m, step3, acc, 4);
                }
            }
        }
        return;
    }
#else
    (void)hp;
#endif
    for (int y = r0; y < r1; y++) {
        const uint8_t *row = src->px + (size_t)y * src->w * 3;
        float *o = out + (size_t)(y - r0) * w * 3;
        for (int x = 0; x < w; x++) {
            const float *k = cx->w + (size_t)x * cx->stride;
            const uint8_t *s = row + (size_t)cx->start[x] * 3;
            float r = 0, g = 0, b = 0;
            for (int j = 0; j < cx->n[x]; j++) r += k[j] * s[3 * j], g += k[j] * s[3 * j + 1], b += k[j] * s[3 * j + 2];
            o[3 * x] = r, o[3 * x + 1] = g, o[3 * x + 2] = b;
        }
    }
}

/* Output rows go in bands of BAND: the source rows a band's vertical taps reach pass horizontally into
 * a buffer of a few hundred KB (in L2, and reused, where one [src->h][w][3] float image of several MB
 * came fresh from the kernel, page by page, for every photo), then vertically. Rows two bands share
 * are computed twice, the same way: the same bits as one whole pass. */
enum { BAND = 32 };

static int resize_impl(const ac_image *src, int w, int h, int stretch, ac_image *dst, ac_err *err) {
    memset(dst, 0, sizeof *dst);
    if (!src->px || src->w <= 0 || src->h <= 0) return ac_errf(err, "resize: empty source image");
    if (w <= 0 || h <= 0) return ac_errf(err, "resize: bad target size %dx%d", w, h);
    uint64_t maxpx = ac_limits_get().max_image_pixels;
    if ((uint64_t)w * (uint64_t)h > maxpx)
        return ac_errf(err, "resize: %dx%d is over the limit of %llu pixels (raise ATTNCAP_MAX_IMAGE_PIXELS)", w, h,
                       (unsigned long long)maxpx);
    coeffs cx = {0}, cy = {0};
    float *tmp = NULL;
    hpass hp = {0};
    dst->px = ac_malloc((size_t)w * h * 3);
    if (!dst->px || coeffs_make(src->w, w, stretch, &cx) || coeffs_make(src->h, h, stretch, &cy)) goto oom;
    int rows = 0; /* the most source rows a band reaches */
    for (int y0 = 0; y0 < h; y0 += BAND) {
        const int y1 = y0 + BAND < h ? y0 + BAND : h;
        int hi = 0;
        for (int y = y0; y < y1; y++) hi = cy.start[y] + cy.n[y] > hi ? cy.start[y] + cy.n[y] : hi;
        rows = hi - cy.start[y0] > rows ? hi - cy.start[y0] : rows;
    }
    if (!(tmp = ac_malloc((size_t)w * rows * 3 * sizeof *tmp))) goto oom;
    hpass_init(&hp, src, w, &cx);
    for (int y0 = 0; y0 < h; y0 += BAND) { /* horizontal pass of the band's rows into float, then vertical, rounding once */
        const int y1 = y0 + BAND < h ? y0 + BAND : h, r0 = cy.start[y0];
        int r1 = 0;
        for (int y = y0; y < y1; y++) r1 = cy.start[y] + cy.n[y] > r1 ? cy.start[y] + cy.n[y] : r1;
        horizontal_rows(&hp, src, w, &cx, r0, r1, tmp);
        for (int y = y0; y < y1; y++)
            vertical_row(tmp + (size_t)(cy.start[y] - r0) * w * 3, (size_t)w * 3, cy.w + (size_t)y * cy.stride, cy.n[y],
                         dst->px + (size_t)y * w * 3);
    }
    hpass_free(&hp);
    free(tmp);
    coeffs_free(&cx);
    coeffs_free(&cy);
    dst->w = w, dst->h = h;
    return 0;
oom:
    free(tmp);
    free(dst->px);
    dst->px = NULL;
    coeffs_free(&cx);
    coeffs_free(&cy);
    return ac_errf(err, "resize: out of memory");
}

int ac_image_resize(const ac_image *src, int w, int h, ac_image *dst, ac_err *err) {
    return resize_impl(src, w, h, 1, dst, err);
}

int ac_image_resize_bilinear(const ac_image *src, int w, int h, ac_image *dst, ac_err *err) {
    return resize_impl(src, w, h, 0, dst, err);
}

void ac_image_to_float(const ac_image *img, float mean, float scale, float *out) {
    size_t n = (size_t)img->w * img->h * 3, i = 0;
#if defined(__AVX512F__) /* the same subtract and multiply as the loop below, 16 (AVX2: 8) at a time */
    const __m512 m = _mm512_set1_ps(mean), sc = _mm512_set1_ps(scale);
    for (; i + 16 <= n; i += 16) {
        __m512 v = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(img->px + i))));
        _mm512_storeu_ps(out + i, _mm512_mul_ps(_mm512_sub_ps(v, m), sc));
    }
#elif defined(__AVX2__)
    const __m256 m = _mm256_set1_ps(mean), sc = _mm256_set1_ps(scale);
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(img->px + i))));
        _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_sub_ps(v, m), sc));
    }
#endif
    for (; i < n; i++) out[i] = ((float)img->px[i] - mean) * scale;
}
