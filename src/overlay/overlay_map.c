/* overlay_map.c: the attention map of one word and its blend over the photo (overlay.h).
 *
 * The attention map is the grid of alphas seen as boxes (cell (i, j) covers its share of the photo)
 * blurred by a Gaussian of sigma cells: per pixel, weight of column j = Phi((x1 - x) / s) -
 * Phi((x0 - x) / s), renormalised at the borders, so the map is separable and costs
 * O(grid_h * w + grid_h * w * h) per word. This is what the paper's figures do (upsample, then
 * Gaussian filter), without ever building the blocky image. The map is then scaled min..max to 0..1.
 * Its own file so that the sheet (overlay_sheet.c) and the per-word files (overlay.c) both draw with it
 * without calling each other. */
#include "attncap/overlay.h"
#include "alloc_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* wt [n_px, cells]: weight of each cell for each pixel centre, rows summing to 1. */
static void axis_weights(int cells, int n_px, float sigma, float *wt) {
    double cw = (double)n_px / cells, s = sigma * cw;
    for (int x = 0; x < n_px; x++) {
        double xc = x + 0.5, sum = 0;
        float *r = wt + (size_t)x * cells;
        for (int j = 0; j < cells; j++) {
            double x0 = j * cw, x1 = (j + 1) * cw, v;
            if (s <= 0) v = xc >= x0 && xc < x1;
            else v = 0.5 * (erf((x1 - xc) / (s * M_SQRT2)) - erf((x0 - xc) / (s * M_SQRT2)));
            r[j] = (float)v;
            sum += v;
        }
        for (int j = 0; j < cells; j++) r[j] = sum > 0 ? (float)(r[j] / sum) : 0.0f;
    }
}

void ac_attention_stats(const float *alpha, int n, float *peak, float *entropy) {
    double pk = 0, hsum = 0;
    for (int i = 0; i < n; i++) {
        const double a = alpha[i];
        if (a > pk) pk = a;
        if (a > 0) hsum -= a * log(a);
    }
    *peak = (float)pk;
    *entropy = n > 1 ? (float)fmin(1, fmax(0, hsum / log((double)n))) : 0;
}

void ac_attention_map(const float *alpha, int gh, int gw, float sigma, int w, int h, float *out) {
    ac_attention_map_scaled(alpha, gh, gw, sigma, w, h, 0, out);
}

void ac_attention_map_scaled(const float *alpha, int gh, int gw, float sigma, int w, int h, int absolute, float *out) {
    float *wx = ac_malloc((size_t)w * gw * sizeof *wx), *wy = ac_malloc((size_t)h * gh * sizeof *wy);
    float *rows = ac_malloc((size_t)gh * w * sizeof *rows); /* [gh, w]: alpha blurred along x */
    if (!wx || !wy || !rows) {
        memset(out, 0, (size_t)w * h * sizeof *out);
        free(wx), free(wy), free(rows);
        return;
    }
    axis_weights(gw, w, sigma, wx);
    axis_weights(gh, h, sigma, wy);
    for (int i = 0; i < gh; i++)
        for (int x = 0; x < w; x++) {
            float s = 0;
            for (int j = 0; j < gw; j++) s += alpha[i * gw + j] * wx[(size_t)x * gw + j];
            rows[(size_t)i * w + x] = s;
        }
    float mx = -INFINITY, mn = INFINITY;
    for (int y = 0; y < h; y++) {
        float *o = out + (size_t)y * w;
        memset(o, 0, (size_t)w * sizeof *o);
        for (int i = 0; i < gh; i++) {
            float wv = wy[(size_t)y * gh + i];
            if (wv == 0) continue;
            const float *r = rows + (size_t)i * w;
            for (int x = 0; x < w; x++) o[x] += wv * r[x];
        }
        for (int x = 0; x < w; x++) mx = o[x] > mx ? o[x] : mx, mn = o[x] < mn ? o[x] : mn;
    }
    /* min..max -> 0..1, as matplotlib's imshow in the paper's figures; a (nearly) flat map is not
     * stretched beyond 20x, so float noise on uniform attention is not shown as a hot spot.
     * Absolute: the weights as they are (the blur keeps them in 0..1). */
    float range = fmaxf(mx - mn, 0.05f * fabsf(mx));
    if (absolute)
        for (size_t k = 0; k < (size_t)w * h; k++) out[k] = fminf(1, fmaxf(0, out[k]));
    else if (range > 0)
        for (size_t k = 0; k < (size_t)w * h; k++) out[k] = (out[k] - mn) / range;
    else
        memset(out, 0, (size_t)w * h * sizeof *out);
    free(wx), free(wy), free(rows);
}

/* An inferno-like map: 9 stops of matplotlib's inferno, linearly interpolated. */
static void inferno(float t, float rgb[3]) {
    static const float stops[9][3] = {{0, 0, 4},       {31, 12, 72},   {85, 15, 109},
                                      {136, 34, 106},  {186, 54, 85},  {227, 89, 51},
                                      {249, 140, 10},  {249, 201, 50}, {252, 255, 164}};
    t = t < 0 ? 0 : t > 1 ? 1 : t;
    float u = t * 8;
    int i = (int)u;
    if (i > 7) i = 7;
    u -= i;
    for (int c = 0; c < 3; c++) rgb[c] = stops[i][c] * (1 - u) + stops[i + 1][c] * u;
}

void ac_overlay_blend(const ac_image *photo, const float *map, ac_overlay_style style, ac_overlay_base base,
                      ac_image *out) {
    /* per-level tables of the map value m (1024 levels: invisible steps) */
    enum { NL = 1024 };
    float ka[NL], kb[NL][3], kc[NL], ks[NL], kw[NL];
    for (int i = 0; i < NL; i++) {
        float m = (float)i / (NL - 1);
        if (style == AC_OVERLAY_HEAT) {
            /* faint attention leaves the photo visible; strong attention is opaque colour */
            float u = m < 0.06f ? 0 : (m - 0.06f) / 0.94f, a = 0.75f * powf(u, 1.3f), cm[3];
            inferno(0.15f + 0.85f * m, cm);
            ka[i] = 0.9f * (1 - a);
            for (int c = 0; c < 3; c++) kb[i][c] = cm[c] * a;
        } else {
            /* away from attention: dark and desaturated; on it: the photo, lifted towards white */
            kc[i] = 0.3f + 0.7f * m, ks[i] = 0.35f + 0.65f * m, kw[i] = 0.3f * m * m;
        }
    }
    size_t n = (size_t)photo->w * photo->h;
    for (size_t k = 0; k < n; k++) {
        const uint8_t *p = photo->px + 3 * k;
        uint8_t *o = out->px + 3 * k;
        float m = map[k];
        int li = (int)((m < 0 ? 0 : m > 1 ? 1 : m) * (NL - 1) + 0.5f);
        float r = p[0], g = p[1], b = p[2];
        float lum = 0.299f * r + 0.587f * g + 0.114f * b;
        float v[3];
        if (style == AC_OVERLAY_HEAT) {
            const float under[3] = {base == AC_OVERLAY_COLOUR ? r : lum, base == AC_OVERLAY_COLOUR ? g : lum,
                                    base == AC_OVERLAY_COLOUR ? b : lum};
            for (int c = 0; c < 3; c++) v[c] = under[c] * ka[li] + kb[li][c];
        } else {
            float rgb[3] = {r, g, b};
            for (int c = 0; c < 3; c++) {
                float x = (lum + (rgb[c] - lum) * ks[li]) * kc[li];
                v[c] = x + (255 - x) * kw[li];
            }
        }
        for (int c = 0; c < 3; c++) o[c] = (uint8_t)(v[c] < 0 ? 0 : v[c] > 255 ? 255 : v[c] + 0.5f);
    }
}
