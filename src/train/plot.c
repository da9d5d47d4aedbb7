/* plot.c: training curves as a PNG, drawn by hand: axes with ticks, up to 4 line series (left
 * axis for losses, right axis for scores), a legend in one row between the title and the plot area
 * (never over a curve), text in the default font (font.h; text is skipped if the font is missing).
 * Written by png.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/font.h"
#include "attncap/png.h"
#include "train_internal.h"
#include "alloc_internal.h"

#define PW 900
#define PH 520
#define ML 70
#define MR 70
#define MT 64 /* the title, then the legend's row */
#define MB 50

typedef struct canvas {
    unsigned char *px; /* PW * PH * 3 */
    ac_font *font;     /* NULL: no text */
} canvas;

static void blend(canvas *c, int x, int y, unsigned rgb, float a) {
    if (x < 0 || y < 0 || x >= PW || y >= PH || a <= 0) return;
    if (a > 1) a = 1;
    unsigned char *p = c->px + ((size_t)y * PW + x) * 3;
    const int col[3] = {(int)(rgb >> 16) & 255, (int)(rgb >> 8) & 255, (int)rgb & 255};
    for (int k = 0; k < 3; k++) p[k] = (unsigned char)(p[k] + (col[k] - p[k]) * a + 0.5f);
}

/* An anti-aliased thick line: distance of each pixel in the bounding box to the segment. */
static void line(canvas *c, double x0, double y0, double x1, double y1, double w, unsigned rgb) {
    int xa = (int)floor(fmin(x0, x1) - w - 1), xb = (int)ceil(fmax(x0, x1) + w + 1);
    int ya = (int)floor(fmin(y0, y1) - w - 1), yb = (int)ceil(fmax(y0, y1) + w + 1);
    double dx = x1 - x0, dy = y1 - y0, l2 = dx * dx + dy * dy;
    for (int y = ya; y <= yb; y++)
        for (int x = xa; x <= xb; x++) {
            double t = l2 > 0 ? ((x - x0) * dx + (y - y0) * dy) / l2 : 0;
            t = t < 0 ? 0 : t > 1 ? 1 : t;
            double ex = x0 + t * dx - x, ey = y0 + t * dy - y, d = sqrt(ex * ex + ey * ey);
            blend(c, x, y, rgb, (float)(w / 2 + 0.5 - d));
        }
}

/* Text with its left (align 0), centre (1) or right (2) at x, baseline at y. */
static void text(canvas *c, double x, double y, const char *s, float size, unsigned rgb, int align) {
    if (!c->font) return;
    const uint8_t col[3] = {(uint8_t)(rgb >> 16), (uint8_t)(rgb >> 8), (uint8_t)rgb};
    const int w = ac_font_width(c->font, size, s);
    ac_image img = {PW, PH, c->px};
    ac_font_draw(c->font, &img, (int)lround(x - (align == 1 ? w / 2.0 : align == 2 ? w : 0)),
                 (int)y - ac_font_ascent(c->font, size), size, s, col);
}

static void nice_range(double lo, double hi, double *a, double *b, double *step) {
    if (!(hi > lo)) hi = lo + 1, lo -= 1;
    double span = hi - lo, raw = span / 5, mag = pow(10, floor(log10(raw))), f = raw / mag;
    double st = (f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10) * mag;
    *a = floor(lo / st) * st, *b = ceil(hi / st) * st, *step = st;
}

int ac_plot_png(const char *path, const char *title, const char *xlabel, int n, const double *x,
                const ac_plot_series *s, int n_series, ac_err *err) {
    canvas c;
    memset(&c, 0, sizeof c);
    c.px = ac_malloc((size_t)PW * PH * 3);
    if (!c.px) return ac_errf(err, "%s: out of memory", path);
    memset(c.px, 255, (size_t)PW * PH * 3);
    ac_err no_font;
    if (ac_font_load(NULL, &c.font, &no_font)) c.font = NULL; /* a plot without text rather than none */
    /* ranges */
    double xlo = INFINITY, xhi = -INFINITY, lo[2] = {INFINITY, INFINITY}, hi[2] = {-INFINITY, -INFINITY};
    for (int i = 0; i < n; i++) xlo = fmin(xlo, x[i]), xhi = fmax(xhi, x[i]);
    for (int k = 0; k < n_series; k++)
        for (int i = 0; i < n; i++)
            if (isfinite(s[k].y[i])) lo[s[k].right] = fmin(lo[s[k].right], s[k].y[i]), hi[s[k].right] = fmax(hi[s[k].right], s[k].y[i]);
    if (!isfinite(xlo)) xlo = 0, xhi = 1;
    if (xhi <= xlo) xhi = xlo + 1;
    double ya[2], yb[2], ys[2], xa, xb, xs;
    nice_range(xlo, xhi, &xa, &xb, &xs);
    int has_right = 0;
    for (int k = 0; k < n_series; k++) has_right |= s[k].right;
    for (int a = 0; a < 2; a++) {
        if (!isfinite(lo[a])) lo[a] = 0, hi[a] = 1;
        nice_range(lo[a], hi[a], &ya[a], &yb[a], &ys[a]);
    }
    const double x0 = ML, x1 = PW - MR, y0 = PH - MB, y1 = MT;
#define PX(v) (x0 + ((v) - xa) / (xb - xa) * (x1 - x0))
#define PY(v, a) (y0 - ((v) - ya[a]) / (yb[a] - ya[a]) * (y0 - y1))
    char buf[64];
    for (double v = xa; v <= xb + xs / 2; v += xs) {
        line(&c, PX(v), y0, PX(v), y1, 1, 0xe6e6e6);
        snprintf(buf, sizeof buf, "%g", v);
        text(&c, PX(v), y0 + 18, buf, 13, 0x333333, 1);
    }
    for (double v = ya[0]; v <= yb[0] + ys[0] / 2; v += ys[0]) {
        line(&c, x0, PY(v, 0), x1, PY(v, 0), 1, 0xe6e6e6);
        snprintf(buf, sizeof buf, "%g", v);
        text(&c, x0 - 6, PY(v, 0) + 5, buf, 13, 0x333333, 2);
    }
    if (has_right)
        for (double v = ya[1]; v <= yb[1] + ys[1] / 2; v += ys[1]) {
            snprintf(buf, sizeof buf, "%g", v);
            text(&c, x1 + 6, PY(v, 1) + 5, buf, 13, 0x333333, 0);
        }
    line(&c, x0, y0, x1, y0, 1.5, 0x000000);
    line(&c, x0, y0, x0, y1, 1.5, 0x000000);
    if (has_right) line(&c, x1, y0, x1, y1, 1.5, 0x000000);
    text(&c, (x0 + x1) / 2, PH - 12, xlabel, 14, 0x000000, 1);
    text(&c, (x0 + x1) / 2, 24, title, 16, 0x000000, 1);
    text(&c, 8, MT - 10, "loss", 13, 0x000000, 0);
    if (has_right) text(&c, PW - 8, MT - 10, "score", 13, 0x000000, 2);
    for (int k = 0; k < n_series; k++) {
        const int a = s[k].right;
        for (int i = 0; i + 1 < n; i++)
            if (isfinite(s[k].y[i]) && isfinite(s[k].y[i + 1]))
                line(&c, PX(x[i]), PY(s[k].y[i], a), PX(x[i + 1]), PY(s[k].y[i + 1], a), 2.2, s[k].rgb);
        for (int i = 0; i < n; i++)
            if (isfinite(s[k].y[i])) line(&c, PX(x[i]), PY(s[k].y[i], a), PX(x[i]), PY(s[k].y[i], a), 5, s[k].rgb);
    }
    /* the legend: one row above the plot area, left to right */
    double lx = x0;
    const double ly = MT - 16;
    for (int k = 0; k < n_series; k++) {
        line(&c, lx, ly - 4, lx + 22, ly - 4, 3, s[k].rgb);
        text(&c, lx + 28, ly, s[k].name, 13, 0x000000, 0);
        lx += 28 + (c.font ? ac_font_width(c.font, 13, s[k].name) : 60) + 24;
    }
#undef PX
#undef PY
    const ac_image img = {PW, PH, c.px};
    int rc = ac_png_write(path, &img, err);
    free(c.px);
    ac_font_free(c.font);
    return rc;
}
