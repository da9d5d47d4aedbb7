/* regions.c: detections as annotation vectors (regions.h). */
#include "attncap/regions.h"

#include <math.h>
#include <string.h>

#include "attncap/objects.h"

int ac_regions_from_detections(const ac_detections *d, const char *const *names, int n_names, float min_score, int max,
                               ac_region *out) {
    int n = 0;
    if (max > AC_REGIONS_MAX) max = AC_REGIONS_MAX;
    if (d->width < 1 || d->height < 1) return 0;
    const float W = (float)d->width, H = (float)d->height;
    for (int i = 0; i < d->n && n < max; i++) { /* items are best first */
        const ac_detection *b = &d->items[i];
        if (!(b->score >= min_score) || b->label < 0 || b->label >= n_names) continue;
        int k = ac_object_index(names[b->label]);
        if (k < 0) continue;
        ac_region r = {b->x0 / W, b->y0 / H, b->x1 / W, b->y1 / H, b->score, k};
        r.x0 = fminf(fmaxf(r.x0, 0), 1), r.x1 = fminf(fmaxf(r.x1, r.x0), 1);
        r.y0 = fminf(fmaxf(r.y0, 0), 1), r.y1 = fminf(fmaxf(r.y1, r.y0), 1);
        out[n++] = r;
    }
    return n;
}

int ac_regions_merge(const ac_region *a, int na, const ac_region *b, int nb, int max, ac_region *out) {
    int n = 0, i = 0, j = 0;
    while (n < max && (i < na || j < nb))
        out[n++] = j >= nb || (i < na && !(b[j].score > a[i].score)) ? a[i++] : b[j++];
    return n;
}

void ac_region_flip(ac_region *r) {
    float x0 = 1.0f - r->x1, x1 = 1.0f - r->x0;
    r->x0 = x0, r->x1 = x1;
}

/* splitmix64: the code's pseudo-random stream, fixed by (category, index). */
static uint64_t mix(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

void ac_region_code(int category, int D, float *code) {
    double norm = 0;
    for (int d = 0; d < D; d += 2) { /* Box-Muller pairs */
        uint64_t a = mix(((uint64_t)category << 32) ^ (uint64_t)d), b = mix(a);
        double u = ((double)(a >> 11) + 0.5) / 9007199254740992.0, v = (double)(b >> 11) / 9007199254740992.0;
        double rad = sqrt(-2.0 * log(u));
        code[d] = (float)(rad * cos(2 * M_PI * v));
        if (d + 1 < D) code[d + 1] = (float)(rad * sin(2 * M_PI * v));
    }
    for (int d = 0; d < D; d++) norm += (double)code[d] * code[d];
    float inv = (float)(1.0 / sqrt(norm));
    for (int d = 0; d < D; d++) code[d] *= inv;
}

void ac_region_vector(const float *grid, int gh, int gw, int D, const ac_region *r, float code_scale, float *out) {
    memset(out, 0, sizeof(float) * (size_t)D);
    int n = 0;
    for (int i = 0; i < gh; i++) {
        float cy = ((float)i + 0.5f) / (float)gh;
        if (cy < r->y0 || cy > r->y1) continue;
        for (int j = 0; j < gw; j++) {
            float cx = ((float)j + 0.5f) / (float)gw;
            if (cx < r->x0 || cx > r->x1) continue;
            const float *a = grid + ((size_t)i * gw + j) * D;
            for (int d = 0; d < D; d++) out[d] += a[d];
            n++;
        }
    }
    if (n == 0) { /* a box smaller than a cell: the cell under its centre */
        int i = (int)((r->y0 + r->y1) / 2 * (float)gh), j = (int)((r->x0 + r->x1) / 2 * (float)gw);
        i = i < 0 ? 0 : i >= gh ? gh - 1 : i, j = j < 0 ? 0 : j >= gw ? gw - 1 : j;
        memcpy(out, grid + ((size_t)i * gw + j) * D, sizeof(float) * (size_t)D);
        n = 1;
    }
    const float inv = 1.0f / (float)n, s = r->score * code_scale;
    float code[AC_REGION_MAX_DIM];
    ac_region_code(r->category, D, code);
    for (int d = 0; d < D; d++) out[d] = out[d] * inv + s * code[d];
}
